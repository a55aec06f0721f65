/**
 * A project under `msgflow start`'s wiring for conversation tests: the
 * runtime with its local service listening, the notification consumers
 * polling it over HTTP, flows loaded from YAML, a ManualClock; people write
 * through the local service's admin `incoming` endpoint (the operator from
 * the phone with `type: outgoing`).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Message } from '../../src/api/types.js';
import { createClient } from '../../src/client/client.js';
import { loadConfig } from '../../src/config/load.js';
import { identityOf } from '../../src/runtime/clients.js';
import { startNotificationConsumers, type NotificationConsumers } from '../../src/runtime/notifications/consumers.js';
import { createRuntime, type Runtime } from '../../src/runtime/runtime.js';
import { ManualClock } from '../../src/util/clock.js';
import { freePort } from '../support/ports.js';

export const TOKEN = 'conversation-token-5d2a';
export const ALICE = '79001112233@c.us';
export const BOB = '79002223344@c.us';
export const T0 = Date.parse('2026-03-02T09:00:00Z');
const quiet = { debug() {}, info() {}, warn() {}, error() {} };

export const configYaml = (port: number, extra = '') => `instances:
  default:
    apiUrl: local
    # Calls are not paced on the client: the engine clock is a ManualClock that moves only when a test says.
    rateLimit: false
local:
  port: ${port}
  dataDir: .msgflow/local
  network:
    accounts:
      - { phone: 79001112233, name: Alice }
      - { phone: 79002223344, name: Bob }
    deliveredAfterMs: 0
  instances:
    - idInstance: "1101000001"
      apiTokenInstance: ${TOKEN}
      sendIntervalMs: 500
      rateLimits: { getChatHistory: 0, receiveNotification: 0, deleteNotification: 0 }
store: { driver: lowdb, dir: .msgflow/state }
${extra}`;

export interface Project {
  dir: string;
  clock: ManualClock;
  runtime: Runtime;
  consumers: NotificationConsumers;
  /** A person writes to the account (`from` a chat), or the operator from the phone to that chat (`outgoing`). */
  say(chatId: string, text: string, o?: { outgoing?: boolean }): Promise<void>;
  /** The texts the account sent to the chat, oldest first. */
  sent(chatId: string): Promise<string[]>;
  /** Stops it; `keep` leaves its folder for {@link startProject}'s `again`. */
  close(o?: { keep?: boolean }): Promise<void>;
}

/**
 * Starts the project: `flows` (file name -> YAML) and config.yaml extras;
 * `again` starts it again on a stopped one's folder (its store and local
 * service data), with the engine clock where that one's stopped.
 */
export async function startProject(flows: Record<string, string>, extraConfig = '', again?: { dir: string; at: number }): Promise<Project> {
  const dir = again?.dir ?? mkdtempSync(path.join(tmpdir(), 'msgflow-conv-'));
  if (!again) {
    mkdirSync(path.join(dir, 'flows'));
    for (const [name, text] of Object.entries(flows)) writeFileSync(path.join(dir, 'flows', name), text);
    writeFileSync(path.join(dir, 'config.yaml'), configYaml(await freePort(), extraConfig));
  }
  const loaded = loadConfig(path.join(dir, 'config.yaml'));
  const clock = new ManualClock(again?.at ?? T0);
  const runtime = await createRuntime({ config: loaded, command: 'start', listen: true, clock });
  const { flows: loadedFlows, errors } = runtime.flows();
  if (errors.length) throw new Error(errors.map((e) => e.message).join('\n'));
  const consumers = await startNotificationConsumers({
    ...runtime,
    flows: loadedFlows,
    identityFor: (n) => identityOf(loaded, n),
    logger: quiet,
  });
  const url = runtime.localUrl!;
  const client = createClient({ apiUrl: url, idInstance: '1101000001', apiTokenInstance: TOKEN, rateLimit: false, retries: 0 });
  return {
    dir,
    clock,
    runtime,
    consumers,
    async say(chatId, text, o = {}) {
      const res = await fetch(`${url}/_local/waInstance1101000001/incoming/${TOKEN}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ chatId, typeMessage: 'textMessage', textMessage: text, ...(o.outgoing ? { type: 'outgoing' } : {}) }),
      });
      if (res.status !== 200) throw new Error(`incoming: ${res.status} ${await res.text()}`);
    },
    async sent(chatId) {
      const history = await client.getChatHistory({ chatId, count: 100 });
      return history
        .filter((m: Message) => m.type === 'outgoing' && m.textMessage !== undefined)
        .reverse()
        .map((m: Message) => m.textMessage!);
    },
    async close(o = {}) {
      await consumers.stop();
      await client.close();
      await runtime.close();
      if (!o.keep) rmSync(dir, { recursive: true, force: true });
    },
  };
}
