/**
 * The ask-and-wait bot (examples/ask-and-wait, the welcome bot before it
 * had sessions) live, on the daemon's
 * path: the runtime of `msgflow start` with its local service listening, its
 * notification consumer polling over the loopback API, and messages arriving
 * through the local service's admin `incoming` endpoint as a person would
 * send them: "hi", then, once the menu is out, "1". On a ManualClock, so
 * that the "hi", the start of the wait and the "1" fall in the same second:
 * only the order of the messages can tell them apart.
 */
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Message } from '../../src/api/types.js';
import { createClient } from '../../src/client/client.js';
import { loadConfig } from '../../src/config/load.js';
import { identityOf } from '../../src/runtime/clients.js';
import { ManualClock } from '../../src/util/clock.js';
import { startNotificationConsumers } from '../../src/runtime/notifications/consumers.js';
import { createRuntime } from '../../src/runtime/runtime.js';
import { waitFor } from '../support/wait.js';
import { whileTimePasses } from '../support/time-passes.js';
import { freePort } from '../support/ports.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const TOKEN = 'welcome-live-token-7c1e';
const ALICE = '79001112233@c.us';
const logger = { debug() {}, info() {}, warn() {}, error() {} };

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

const config = (port: number) => `instances:
  default:
    apiUrl: local
local:
  port: ${port}
  dataDir: .msgflow/local
  staticDir: public
  network:
    accounts:
      - { phone: 79001112233, name: Alice }
  instances:
    - idInstance: "1101000001"
      apiTokenInstance: ${TOKEN}
      sendIntervalMs: 500
      # The test watches the chat (getChatHistory allows one call a second by default).
      rateLimits: { getChatHistory: 0 }
store: { driver: lowdb, dir: .msgflow/state }
`;

describe('the ask-and-wait bot under msgflow start (local service over HTTP)', () => {
  it('hi gets the menu; the 1 sent after it is the answer (not the hi) and gets the brochure', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'msgflow-welcome-'));
    cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
    mkdirSync(path.join(dir, 'flows'));
    mkdirSync(path.join(dir, 'public'));
    copyFileSync(path.join(ROOT, 'examples/ask-and-wait/flows/ask-and-wait.yaml'), path.join(dir, 'flows/ask-and-wait.yaml'));
    copyFileSync(path.join(ROOT, 'public/brochure.pdf'), path.join(dir, 'public/brochure.pdf'));
    writeFileSync(path.join(dir, 'config.yaml'), config(await freePort()));

    // What `msgflow start` wires: the runtime, its local service listening, the notification consumers.
    const loaded = loadConfig(path.join(dir, 'config.yaml'));
    const clock = new ManualClock(Date.parse('2026-01-05T09:00:00Z'));
    const runtime = await createRuntime({ config: loaded, command: 'start', listen: true, clock });
    cleanups.push(() => runtime.close());
    const { flows, errors } = runtime.flows();
    expect(errors).toEqual([]);
    const consumers = await startNotificationConsumers({ ...runtime, flows, identityFor: (n) => identityOf(loaded, n), logger });
    cleanups.push(() => whileTimePasses(clock, () => consumers.stop()));
    expect(consumers.instances).toEqual([{ name: 'default', mode: 'poll' }]);

    const url = runtime.localUrl!;
    const say = async (text: string) => {
      const res = await fetch(`${url}/_local/waInstance1101000001/incoming/${TOKEN}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ chatId: ALICE, typeMessage: 'textMessage', textMessage: text }),
      });
      expect(res.status).toBe(200);
    };
    const client = createClient({ apiUrl: url, idInstance: '1101000001', apiTokenInstance: TOKEN, rateLimit: false, retries: 0 });
    cleanups.push(() => client.close());
    const outgoing = async () => (await client.getChatHistory({ chatId: ALICE, count: 20 })).filter((m: Message) => m.type === 'outgoing');

    await say('hi');
    // The menu is in the chat, the run is waiting for the answer (or already over: then the expectations say why).
    await waitFor('the menu to be sent', async () => (await outgoing()).some((m) => /Reply 1/.test(m.textMessage ?? '')));
    const run = await waitFor('the ask-and-wait run to wait or end', async () => {
      const [r] = await runtime.engine.listRuns({ flow: 'ask-and-wait' });
      return r && r.status !== 'running' ? r : undefined;
    });
    expect(run.trigger).toBe('notification');
    // Still the second of the hi: the answer is told from the greeting by the order they came in.
    await say('1');
    const done = await waitFor('the ask-and-wait run to end', async () => {
      await clock.advance(1000);
      const r = await runtime.engine.getRun(run.id);
      return r && !['running', 'waiting'].includes(r.status) ? r : undefined;
    });
    expect(done.status).toBe('succeeded');
    const steps = Object.fromEntries((await runtime.engine.getSteps(run.id)).map((s) => [s.step, s]));
    expect(steps.answer!.output).toMatchObject({ outcome: 'replied', text: '1' });
    expect(steps.brochure!.status).toBe('succeeded');
    const file = await waitFor('the brochure in the chat', async () => {
      await clock.advance(1000);
      return (await outgoing()).find((m) => m.fileName === 'brochure.pdf');
    });
    expect(file).toMatchObject({ typeMessage: 'documentMessage', caption: 'Here is our brochure.', mimeType: 'application/pdf' });
    expect((await runtime.engine.listRuns({ flow: 'ask-and-wait' })).length).toBe(1);
  }, 60_000);
});
