/**
 * A local instance's own number (`wid`) is read by anyone who sees a
 * notification or a run it started: without `phone` it is a number derived
 * from the instance id, never the id, so the id reaches no run record.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { identityOf } from '../../src/runtime/clients.js';
import { startNotificationConsumers } from '../../src/runtime/notifications/consumers.js';
import { createRuntime } from '../../src/runtime/runtime.js';
import { waitFor } from '../support/wait.js';

const ID = '1101000888';
const TOKEN = 'own-number-token-77';
const logger = { debug() {}, info() {}, warn() {}, error() {} };

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function project(phone?: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'msgflow-own-number-'));
  mkdirSync(path.join(dir, 'flows'));
  writeFileSync(
    path.join(dir, 'config.yaml'),
    `instances:
  default: { apiUrl: local }
local:
  port: 0
  dataDir: .msgflow/local
  instances:
    - idInstance: "${ID}"
      apiTokenInstance: ${TOKEN}
      rateLimits: { getSettings: 0 }${phone ? `\n      phone: "${phone}"` : ''}
store: { driver: lowdb, dir: .msgflow/state }
`,
  );
  writeFileSync(
    path.join(dir, 'flows/on-hello.yaml'),
    `name: on-hello
on:
  notification: { type: incomingMessageReceived }
steps:
  - id: note
    uses: log
    with: { message: "\${{ event.instanceData.wid }} got a message" }
`,
  );
  return dir;
}

/** Starts the daemon's parts (runtime, notification consumers), injects an incoming message, answers the run it started. */
async function runOnIncoming(dir: string) {
  const config = loadConfig(path.join(dir, 'config.yaml'));
  const runtime = await createRuntime({ config, command: 'start' });
  const { flows } = runtime.flows();
  const consumers = await startNotificationConsumers({ ...runtime, flows, identityFor: (n) => identityOf(config, n), logger });
  cleanups.push(async () => {
    await consumers.stop();
    await runtime.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const host = await runtime.local();
  if (host.mode !== 'owner') throw new Error('the test owns its local service');
  const injected = await host.service.handle({
    httpMethod: 'POST',
    path: `/_local/waInstance${ID}/incoming/${TOKEN}`,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ chatId: '79001112233@c.us', type: 'incoming', typeMessage: 'textMessage', textMessage: 'hello' }),
  });
  expect(injected.status).toBe(200);
  const [run] = await waitFor('the run started by the message', async () => {
    const runs = await runtime.engine.listRuns({ flow: 'on-hello' });
    return runs.length > 0 && runs[0]!.status === 'succeeded' ? runs : undefined;
  });
  const settings = (await runtime.clientFor('default').getSettings({})) as { wid: string };
  return { run: (await runtime.engine.getRun(run!.id))!, wid: settings.wid };
}

describe("a local instance's own number", () => {
  it('is not the instance id: the id reaches no run record a notification starts', async () => {
    const { run, wid } = await runOnIncoming(project());
    expect(wid).toMatch(/^7999\d{7}@c\.us$/);
    expect((run.event as { instanceData: { wid: string } }).instanceData.wid).toBe(wid);
    expect(JSON.stringify(run)).not.toContain(ID);
  });

  it('is the configured phone when there is one', async () => {
    const { run, wid } = await runOnIncoming(project('79005554433'));
    expect(wid).toBe('79005554433@c.us');
    expect((run.event as { instanceData: { wid: string } }).instanceData.wid).toBe('79005554433@c.us');
  });
});
