/**
 * The behaviour every EngineClient has, whether the engine is in this
 * process or in a daemon reached over HTTP. A test file calls
 * `describeEngineClientConformance(name, open)` with a harness over a
 * running daemon whose project holds FLOWS (test/ui/helpers.ts) and
 * CLIENT_FLOWS below.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MsgflowError } from '../../src/api/errors.js';
import type { EngineClient, FollowedEvent, RunView } from '../../src/runtime/engine-client/types.js';
import type { PauseRecord } from '../../src/runtime/pauses.js';
import { waitFor } from '../support/wait.js';

/** Flows the suite runs besides test/ui/helpers.ts's (fail-some, slow-check). */
export const CLIENT_FLOWS: Record<string, string> = {
  'hello.yaml': `name: hello
inputs:
  name: { type: string, default: world }
steps:
  - id: greet
    uses: log
    with: { message: "hello \${{ inputs.name }}" }
  - id: again
    uses: log
    with: { message: "bye \${{ inputs.name }}" }
`,
  'nightly.yaml': `name: nightly
on:
  schedule: { cron: '0 3 * * *', timezone: UTC }
concurrency: { max: 1 }
steps:
  - id: say
    uses: log
    with: { message: "slot \${{ run.slot }}" }
`,
  'typed.yaml': `name: typed
inputs:
  count: { type: number }
steps:
  - id: say
    uses: log
    with: { message: "\${{ inputs.count }}" }
`,
};

export interface EngineClientHarness {
  client: EngineClient;
  /** Records an instance-wide pause of the instance `default` as checkAccount.bulk does. */
  addPause(p: Pick<PauseRecord, 'until' | 'reason'>): Promise<void>;
  close(): Promise<void>;
}

/** The code of what `p` rejects with. */
async function codeOf(p: Promise<unknown>): Promise<string> {
  const e = await p.then(
    () => undefined,
    (x: unknown) => x,
  );
  if (!(e instanceof MsgflowError)) throw new Error(`expected a MsgflowError, got ${String(e)}`);
  return e.code;
}

export function describeEngineClientConformance(name: string, open: () => Promise<EngineClientHarness>): void {
  describe(`EngineClient: ${name}`, () => {
    let h: EngineClientHarness;
    let client: EngineClient;
    beforeAll(async () => {
      h = await open();
      client = h.client;
    });
    afterAll(async () => {
      await h?.close();
    });

    it('starts a flow by name and follows it: its events in order, then its end; the run and its steps read back the same', async () => {
      const events: FollowedEvent[] = [];
      const run = await client.start('hello', { inputs: { name: 'Ada' }, onEvent: (e) => events.push(e) });
      expect(run.flow).toBe('hello');
      const ended = await run.done;
      expect(ended).toMatchObject({ id: run.runId, flow: 'hello', status: 'succeeded', trigger: 'manual', dryRun: false });
      const names = events.map((e) => e.name);
      expect(names[0]).toBe('run:started');
      expect(names.at(-1)).toBe('run:finished');
      expect(names.filter((n) => n === 'step:finished')).toHaveLength(2);
      const logged = events.flatMap((e) => (e.name === 'log' ? [e.event.message] : []));
      expect(logged).toEqual(expect.arrayContaining(['hello Ada', 'bye Ada']));
      for (const e of events) expect(e.name === 'log' ? e.event.fields?.runId : (e.event as { runId: string }).runId).toBe(run.runId);
      expect(await client.getRun(run.runId)).toEqual(ended);
      const steps = await client.getSteps(run.runId);
      expect(steps.map((s) => [s.step, s.action, s.status])).toEqual([
        ['greet', 'log', 'succeeded'],
        ['again', 'log', 'succeeded'],
      ]);
    });

    it('a dry run is recorded as one', async () => {
      const run = await client.start('hello', { dryRun: true });
      expect(await run.done).toMatchObject({ status: 'succeeded', dryRun: true });
    });

    it('refuses a bad input naming it, and a flow it has not loaded, starting no run', async () => {
      const before = await client.listRuns({ flow: 'typed' });
      const bad = await client.start('typed', { inputs: { count: 'many' } }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(bad).toBeInstanceOf(MsgflowError);
      expect((bad as MsgflowError).code).toBe('INPUT_ARG_INVALID');
      expect((bad as MsgflowError).params.input).toBe('count');
      expect((bad as MsgflowError).message).toMatch(/inputs\.count: .*many/);
      expect(await codeOf(client.start('no-such-flow'))).toBe('FLOW_NOT_FOUND');
      expect(await client.listRuns({ flow: 'typed' })).toEqual(before);
    });

    it('an unknown run id: getRun says undefined, getSteps [], and follow, cancel and retry RUN_NOT_FOUND', async () => {
      expect(await client.getRun('no-such-run')).toBeUndefined();
      expect(await client.getSteps('no-such-run')).toEqual([]);
      expect(await codeOf(client.follow('no-such-run'))).toBe('RUN_NOT_FOUND');
      expect(await codeOf(client.cancel('no-such-run'))).toBe('RUN_NOT_FOUND');
      expect(await codeOf(client.retry('no-such-run'))).toBe('RUN_NOT_FOUND');
    });

    it('lists runs newest first, by flow, status and limit', async () => {
      const a = await (await client.start('hello', { inputs: { name: 'a' } })).done;
      const b = await (await client.start('hello', { inputs: { name: 'b' } })).done;
      const failed = await (await client.start('fail-some')).done;
      expect(failed.status).toBe('failed');
      const hello = await client.listRuns({ flow: 'hello', limit: 2 });
      expect(hello.map((r) => r.id)).toEqual([b.id, a.id]);
      const failures = await client.listRuns({ status: ['failed'] });
      expect(failures.map((r) => r.id)).toContain(failed.id);
      expect(failures.every((r: RunView) => r.status === 'failed')).toBe(true);
    });

    it('retries a failed run as a new run of its failed items; a succeeded run has nothing to retry', async () => {
      const failed = await (await client.start('fail-some')).done;
      const events: FollowedEvent[] = [];
      const retry = await client.retry(failed.id, { onEvent: (e) => events.push(e) });
      expect(retry.runId).not.toBe(failed.id);
      expect(retry.flow).toBe('fail-some');
      expect((await retry.done).status).toBe('failed');
      expect(events.map((e) => e.name)).toContain('run:started');
      const ok = await (await client.start('hello')).done;
      expect(await codeOf(client.retry(ok.id))).toBe('NOTHING_TO_RETRY');
    });

    it('cancels a live run at its next item boundary (pending), which its followers see end cancelled; a second cancel finds it ended', async () => {
      const run = await client.start('slow-check');
      const follower = await client.follow(run.runId);
      await waitFor('an item of slow-check', async () => ((await client.getRun(run.runId))?.itemsDone ?? 0) > 0);
      const res = await client.cancel(run.runId);
      expect(res).toMatchObject({ runId: run.runId, pending: true, ended: false });
      expect((await run.done).status).toBe('cancelled');
      expect((await follower.done).status).toBe('cancelled');
      expect(await client.cancel(run.runId)).toMatchObject({ runId: run.runId, status: 'cancelled', pending: false, ended: true });
    });

    it('follows a run that already ended: done at once, with the run as it ended', async () => {
      const ended = await (await client.start('hello')).done;
      const again = await client.follow(ended.id);
      expect(again).toMatchObject({ runId: ended.id, flow: 'hello' });
      expect(await again.done).toEqual(ended);
    });

    it('lists the instance-wide pauses in force and lifts those of an instance', async () => {
      await h.addPause({ until: Date.now() + 3_600_000, reason: 'rate_limit_exceeded (retryAfter 1h)' });
      const [p, ...rest] = await client.pauses();
      expect(rest).toEqual([]);
      expect(p).toMatchObject({ instance: 'default', scope: 'checkAccount', reason: 'rate_limit_exceeded (retryAfter 1h)' });
      expect(Object.keys(p!).sort()).toEqual(['identity', 'instance', 'reason', 'retryAfterMs', 'scope', 'since', 'until']);
      expect(await client.liftPauses('default')).toBe(1);
      expect(await client.pauses()).toEqual([]);
      expect(await codeOf(client.liftPauses('no-such-instance'))).toBe('USAGE');
    });

    it('a pause whose end has passed is not in force', async () => {
      await h.addPause({ until: Date.now() - 1000, reason: 'over' });
      expect(await client.pauses()).toEqual([]);
      await client.liftPauses('default');
    });

    it("backfills a scheduled flow's slots in a range once each, one at a time by its concurrency; a second backfill starts nothing", async () => {
      const from = Date.UTC(2026, 0, 5);
      const to = Date.UTC(2026, 0, 9, 12);
      const first = await client.backfill('nightly', { from, to });
      const slots = [5, 6, 7, 8, 9].map((d) => Date.UTC(2026, 0, d, 3));
      expect(first.flow).toBe('nightly');
      expect(first.slots.map((s) => s.slot)).toEqual(slots);
      expect(first.slots.every((s) => s.existing === undefined)).toBe(true);
      const runs = await waitFor('every slot ran', async () => {
        const rs = await Promise.all(first.slots.map((s) => client.getRun(s.runId)));
        return rs.every((r) => r?.status === 'succeeded') ? (rs as RunView[]) : undefined;
      });
      for (const r of runs) expect(r.trigger).toBe('backfill');
      // concurrency max 1: each run started after the one before ended.
      const byStart = [...runs].sort((a, b) => a.startedAt - b.startedAt);
      for (let i = 1; i < byStart.length; i++) expect(byStart[i]!.startedAt).toBeGreaterThanOrEqual(byStart[i - 1]!.finishedAt!);
      const again = await client.backfill('nightly', { from, to });
      expect(again.slots.map((s) => [s.runId, s.existing])).toEqual(first.slots.map((s) => [s.runId, 'succeeded']));
      expect((await client.listRuns({ flow: 'nightly' })).length).toBe(5);
      expect(await codeOf(client.backfill('hello', { from, to }))).toBe('BACKFILL_INVALID');
      expect(await codeOf(client.backfill('nightly', { from: to, to: from }))).toBe('BACKFILL_INVALID');
    });
  });
}
