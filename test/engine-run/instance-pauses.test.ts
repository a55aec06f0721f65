/**
 * Instance-wide pauses as the engine runs them (engine/run/pauses.ts): a
 * forEach `uses: checkAccount` step on the local executor, against the local
 * service on a ManualClock, honours the pause another run raised, raises it
 * itself on rate_limit_exceeded, and goes on once it ends or is lifted; and
 * what a plugin's DefiniteError means to the runner.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { CHECK_ACCOUNT_PAUSE } from '../../src/actions/check-account-bulk.js';
import { DefiniteError } from '../../src/engine/control.js';
import { listPauses, liftPauses, raisePause } from '../../src/engine/run/pauses.js';
import { buildRegistry } from '../../src/runtime/registry.js';
import type { RunRecord } from '../../src/store/types.js';
import { ManualClock } from '../../src/util/clock.js';
import { localConfig, startLocal, T0, type LocalUnderTest } from '../support/local-service.js';
import { waitFor } from '../support/wait.js';
import { action, flow, registryWith, step, testEngine } from './helpers.js';

const HOUR = 3_600_000;
const INSTANCE = { name: 'default', identity: 'local-test' };
const NUMBERS = [79001112233, 79002223344];

let open: LocalUnderTest[] = [];
afterEach(async () => {
  await Promise.all(open.map((l) => l.close()));
  open = [];
});

/** The local service (checkAccount limited as `limit` says) and an engine whose flows check NUMBERS one at a time. */
async function checking(limit: { numbers: number; windowMinutes: number; retryAfterSeconds: number }) {
  const clock = new ManualClock(T0);
  const l = await startLocal({ clock, config: localConfig({}, { checkAccountLimit: limit }) });
  open.push(l);
  const t = testEngine(await buildRegistry({ plugins: [], baseDir: l.dir }), {
    clock,
    clientFor: () => l.client,
    identityFor: () => INSTANCE.identity,
    waitRecheckMs: 5,
  });
  const f = flow([step({ id: 'check', uses: 'checkAccount', forEach: '${{ inputs.numbers }}', with: { phoneNumber: '${{ item }}' } })], {
    inputs: { numbers: { value: NUMBERS } },
  });
  const checks = () => l.requests.filter((r) => r.method === 'checkAccount');
  const waiting = (runId: string) =>
    waitFor('the run to wait on the pause', async () => {
      const r = await t.engine.getRun(runId);
      return r?.status === 'waiting' ? r : undefined;
    });
  return { clock, l, t, f, checks, waiting };
}

describe('instance-wide pauses on the local executor', () => {
  it('a checkAccount item waits for the pause another run raised, without calling, and calls at once when it is lifted', async () => {
    const { t, f, checks, waiting } = await checking({ numbers: 100, windowMinutes: 10, retryAfterSeconds: 60 });
    await raisePause(t.store, INSTANCE, CHECK_ACCOUNT_PAUSE, { since: T0, retryAfterMs: 0, minMs: 2 * HOUR });
    const { runId, done } = await t.engine.start(f);
    const run: RunRecord = await waiting(runId);
    expect(run.waitingUntil).toBe(T0 + 2 * HOUR);
    expect(run.waitReason).toBe('checkAccount paused by rate_limit_exceeded (retryAfter 0ms)');
    expect(checks()).toHaveLength(0);
    expect(await liftPauses(t.store, { name: 'default' })).toHaveLength(1);
    expect(await done).toMatchObject({ status: 'succeeded', itemsDone: 2, itemsFailed: 0 });
    expect(checks()).toHaveLength(2);
  });

  it("rate_limit_exceeded on an item raises the instance's pause for max(2h, retryAfter); the item is checked again after it, in the same attempt", async () => {
    const { clock, t, f, checks, waiting } = await checking({ numbers: 1, windowMinutes: 10, retryAfterSeconds: 60 });
    const { runId, done } = await t.engine.start(f);
    await waiting(runId);
    expect((await listPauses(t.store)).map(([key, p]) => [key, p])).toEqual([
      [
        `${INSTANCE.identity}:checkAccount`,
        {
          instance: 'default',
          identity: INSTANCE.identity,
          scope: 'checkAccount',
          until: T0 + 2 * HOUR,
          since: T0,
          retryAfterMs: 60_000,
          reason: 'rate_limit_exceeded (retryAfter 1m)',
        },
      ],
    ]);
    await clock.advance(2 * HOUR);
    expect(await done).toMatchObject({ status: 'succeeded', itemsDone: 2, itemsFailed: 0 });
    const items = await t.store.getItems(runId, 'check');
    expect(items.get(1)).toMatchObject({ status: 'succeeded', attempts: 1 });
    // One refused by the service's limit, then the same number once the pause is over.
    expect(checks().map((c) => (c.body as { phoneNumber: number }).phoneNumber)).toEqual([NUMBERS[0], NUMBERS[1], NUMBERS[1]]);
  });
});

describe('control errors a plugin throws', () => {
  it('DefiniteError fails the item at once, whatever its retry: says; a plain Error is tried again', async () => {
    let calls = 0;
    const refuse = action('refuse', async (_ctx, input) => {
      calls++;
      if (input.definite) throw new DefiniteError('not a mobile number');
      throw new Error('flaky');
    });
    const t = testEngine(registryWith(refuse));
    const retry = { maxAttempts: 3, backoff: 'fixed' as const, delayMs: 1, maxDelayMs: 1, jitter: false };
    const f = flow([
      step({ id: 'definite', uses: 'refuse', forEach: '${{ [true] }}', with: { definite: '${{ item }}' }, retry }),
      step({ id: 'plain', uses: 'refuse', forEach: '${{ [false] }}', with: { definite: '${{ item }}' }, retry }),
    ]);
    const { runId, done } = await t.engine.start(f);
    await done;
    expect((await t.store.getItems(runId, 'definite')).get(0)).toMatchObject({
      status: 'failed',
      attempts: 1,
      error: { code: 'DEFINITE_FAILURE', message: 'not a mobile number' },
    });
    expect((await t.store.getItems(runId, 'plain')).get(0)).toMatchObject({ status: 'failed', attempts: 3 });
    expect(t.events.filter(([n, p]) => n === 'step:retry' && p.step === 'definite')).toHaveLength(0);
    expect(calls).toBe(1 + 3);
  });
});
