/**
 * With `apiUrl: local`, the client's per-method rate limits default to that
 * local instance's `rateLimits` (0 = unlimited), not the published defaults;
 * limits set on the client instance still win.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { InstanceApi } from '../../src/api/types.js';
import { parseConfig } from '../../src/config/load.js';
import { createClientResolver } from '../../src/runtime/clients.js';
import { openLocalHost, type LocalHost } from '../../src/runtime/local-host.js';
import { ManualClock } from '../../src/util/clock.js';

let host: LocalHost | undefined;
let dir: string | undefined;
afterEach(async () => {
  await host?.close();
  host = undefined;
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function resolverFor(localLimits: string, clientLimits = '') {
  dir = await mkdtemp(path.join(tmpdir(), 'msgflow-limits-'));
  const file = path.join(dir, 'config.yaml');
  const text = [
    'instances:',
    '  default:',
    '    apiUrl: local',
    ...(clientLimits ? [`    rateLimits: ${clientLimits}`] : []),
    'local:',
    '  dataDir: data',
    '  network:',
    '    population: [{ prefix: "7920", share: 1 }]',
    '  instances:',
    '    - idInstance: "1101000001"',
    '      apiTokenInstance: limits-token-123',
    `      rateLimits: ${localLimits}`,
    '      checkAccountLimit: { numbers: 100000, windowMinutes: 10, retryAfterSeconds: 60 }',
    '',
  ].join('\n');
  await writeFile(file, text);
  const config = parseConfig(text, file);
  const clock = new ManualClock(Date.parse('2026-03-01T10:00:00Z'));
  const resolve = createClientResolver(
    config,
    async () => (host ??= await openLocalHost(config, { command: 'test', listen: false, clock })),
    { clock },
  );
  return { client: await resolve('default'), clock };
}

/** Starts n checks at once; the clock never moves unless the test moves it. */
function start(client: InstanceApi, n: number) {
  const state = { done: 0, all: Promise.resolve() as Promise<unknown> };
  state.all = Promise.all(
    Array.from({ length: n }, (_, i) => client.checkAccount({ phoneNumber: 79200000000 + i }).then(() => state.done++)),
  );
  return state;
}

/** Waits (real time, the service writes files) until `done` reaches `n`; fails after 10 s. */
async function reach(state: { done: number }, n: number): Promise<void> {
  for (let i = 0; i < 1000 && state.done < n; i++) await new Promise((r) => setTimeout(r, 10));
  expect(state.done).toBeGreaterThanOrEqual(n);
}

describe('client limits of a local instance', () => {
  it('0 on the local instance: the client does not pace at the published 10/s', async () => {
    const { client } = await resolverFor('{ checkAccount: 0 }');
    // With the published 10/s and a clock that never moves, only 10 would ever answer.
    const r = start(client, 25);
    await reach(r, 25);
  });

  it("the local instance's limit is the client's: at 3/s the requests are 333 ms apart (10/s would be 100 ms)", async () => {
    const { client, clock } = await resolverFor('{ checkAccount: 3 }');
    const r = start(client, 5);
    await reach(r, 1);
    await clock.advance(334);
    await reach(r, 2);
    await new Promise((res) => setTimeout(res, 200));
    expect(r.done).toBe(2);
    for (let i = 0; i < 20 && r.done < 5; i++) {
      await clock.advance(1000);
      await new Promise((res) => setTimeout(res, 20));
    }
    await r.all;
  });

  it('a limit set on the client instance wins', async () => {
    // The local instance is unlimited; the client's own 2/s paces.
    const { client, clock } = await resolverFor('{ checkAccount: 0 }', '{ checkAccount: 2 }');
    const r = start(client, 3);
    await reach(r, 1);
    await new Promise((res) => setTimeout(res, 200));
    expect(r.done).toBe(1);
    await clock.advance(500);
    await reach(r, 2);
    await clock.advance(500);
    await r.all;
  });
});
