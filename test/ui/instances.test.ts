/**
 * The Instances view of the API and the instance metrics, in-process: the
 * local service answers getStateInstance and showMessagesQueue for real; a
 * remote instance nobody serves shows as unreachable with its error code.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { busLogger } from '../../src/engine/run/engine.js';
import { createBus } from '../../src/engine/events.js';
import { identityOf } from '../../src/runtime/clients.js';
import { createRuntime } from '../../src/runtime/runtime.js';
import { createUiServer } from '../../src/ui/server.js';
import { LOCAL_ID, LOCAL_TOKEN, get, startProject, writeProject, type Project } from './helpers.js';

const REMOTE_ID = '1101999999';
const REMOTE_TOKEN = 'remote-instance-secret-token-42';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function project(opts: Parameters<typeof startProject>[0] = {}): Promise<Project> {
  const p = await startProject(opts);
  cleanups.push(() => p.close());
  return p;
}

describe('GET /api/instances', () => {
  it("shows each instance's state, send queue with its next release, and opt-out list size", async () => {
    const p = await project();
    // Three messages into the paced queue (one leaves every 500 ms).
    const client = p.runtime.clientFor('default');
    for (const text of ['one', 'two', 'three']) await client.sendMessage({ chatId: '79001112233@c.us', message: text });
    const id = identityOf(p.runtime.config, 'default');
    const optOut = p.runtime.store.kv('shared:opt-out');
    await optOut.set(`${id}:79001112233@c.us`, { at: Date.now() });
    await optOut.set(`${id}:79002223344@c.us`, { at: Date.now() });
    await optOut.set('local-000000000000:79003334455@c.us', { at: Date.now() });

    const answer = await get(`${p.url}/api/instances`);
    expect(answer.status).toBe(200);
    const inst = answer.body.instances[0];
    expect(inst).toMatchObject({
      name: 'default',
      kind: 'local',
      optOuts: 2,
      live: { reachable: true, state: 'authorized', queue: { sendIntervalMs: 500 } },
    });
    expect(inst.live.queue.length).toBeGreaterThanOrEqual(1);
    expect(inst.live.queue.nextReleaseBy).toBe(inst.live.checkedAt + 500);

    const metrics = (await get(`${p.url}/metrics`)).text;
    expect(metrics).toMatch(/msgflow_send_queue_length\{instance="default"\} [1-3]/);
    expect(metrics).toMatch(/msgflow_api_calls_total\{instance="default",method="sendMessage",outcome="ok"\} 3/);
    expect(metrics).toMatch(/msgflow_api_calls_total\{instance="default",method="getStateInstance",outcome="ok"\} 1/);
    for (const text of [answer.text, metrics]) {
      expect(text).not.toContain(LOCAL_ID);
      expect(text).not.toContain(LOCAL_TOKEN);
    }
  });

  it('shows an instance that cannot be asked as unreachable with the error code, never its id or token', async () => {
    const dir = writeProject();
    const file = path.join(dir, 'config.yaml');
    const text = readFileSync(file, 'utf8').replace(
      'instances:\n  default:\n    apiUrl: local\n',
      `instances:\n  default:\n    apiUrl: local\n  remote:\n    apiUrl: http://127.0.0.1:1\n    idInstance: "${REMOTE_ID}"\n    apiTokenInstance: ${REMOTE_TOKEN}\n    retries: 0\n`,
    );
    writeFileSync(file, text);
    const bus = createBus();
    const runtime = await createRuntime({ config: loadConfig(file), command: 'test', bus, logger: busLogger(bus) });
    const server = await createUiServer({ runtime, port: 0 });
    cleanups.push(async () => {
      await server.close();
      await runtime.close();
      rmSync(dir, { recursive: true, force: true });
    });
    const answer = await get(`${server.url}/api/instances`);
    const remote = answer.body.instances.find((i: any) => i.name === 'remote');
    expect(remote.kind).toBe('remote');
    expect(remote.live).toMatchObject({ reachable: false, error: 'CONNECTION_REFUSED' });
    expect(remote.live.state).toBeUndefined();
    const metrics = (await get(`${server.url}/metrics`)).text;
    expect(metrics).toMatch(/msgflow_api_calls_total\{instance="remote",method="getStateInstance",outcome="CONNECTION_REFUSED"\} 1/);
    for (const t of [answer.text, metrics]) {
      expect(t).not.toContain(REMOTE_ID);
      expect(t).not.toContain(REMOTE_TOKEN);
    }
  });

  it('does not open the local service when told not to (msgflow ui): the instance is not asked, and says why', async () => {
    const p = await project({ probeLocal: false });
    const inst = (await get(`${p.url}/api/instances`)).body.instances[0];
    expect(inst.live).toMatchObject({ reachable: null, note: expect.stringMatching(/not asked/) });
  });
});

describe('instance metrics from the bus', () => {
  it('counts rate-limit answers and observes notification lag by instance name', async () => {
    const p = await project();
    // The contracts of src/engine/events.ts, as the clients and the notification consumer emit them.
    p.runtime.bus.emit('api:call', { instance: 'default', method: 'checkAccount', outcome: 'CHECK_ACCOUNT_RATE_LIMIT', durationMs: 12 });
    p.runtime.bus.emit('api:call', { instance: 'default', method: 'sendMessage', outcome: 'TOO_MANY_REQUESTS', durationMs: 3 });
    p.runtime.bus.emit('api:call', { instance: 'default', method: 'sendMessage', outcome: 'ok', durationMs: 3 });
    p.runtime.bus.emit('notification:received', { instance: 'default', type: 'incomingMessageReceived', lagMs: 1500, flowsStarted: 1 });
    p.runtime.bus.emit('notification:received', { instance: 'default', type: 'outgoingMessageStatus', lagMs: 200, flowsStarted: 0 });
    const m = (await get(`${p.url}/metrics`)).text;
    expect(m).toMatch(/msgflow_rate_limit_waits_total\{instance="default",method="checkAccount"\} 1/);
    expect(m).toMatch(/msgflow_rate_limit_waits_total\{instance="default",method="sendMessage"\} 1/);
    expect(m).toMatch(/msgflow_notification_lag_seconds_count\{instance="default"\} 2/);
    expect(m).toMatch(/msgflow_notification_lag_seconds_sum\{instance="default"\} 1\.7/);
    expect(m).toMatch(/msgflow_notification_lag_seconds_bucket\{le="1",instance="default"\} 1/);
  });
});
