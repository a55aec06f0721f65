/**
 * The menu bot (flows/welcome.yaml, as shipped) live, on the daemon's path:
 * the runtime of `msgflow start` with its local service listening over HTTP,
 * its notification consumer polling, a lowdb store, and two contacts writing
 * through the local service's admin `incoming` endpoint as people would, at
 * the same time: one chat's dialog never waits for the other's. Then
 * the dashboard's sessions API and `msgflow sessions` (in-process) list,
 * show and reset what they left.
 */
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Message } from '../../src/api/types.js';
import { createClient } from '../../src/client/client.js';
import { loadConfig } from '../../src/config/load.js';
import { identityOf } from '../../src/runtime/clients.js';
import { startNotificationConsumers } from '../../src/runtime/notifications/consumers.js';
import { createRuntime } from '../../src/runtime/runtime.js';
import { ManualClock } from '../../src/util/clock.js';
import { cli } from '../support/cli.js';
import { waitFor } from '../support/wait.js';
import { whileTimePasses } from '../support/time-passes.js';
import { REPO } from './helpers.js';
import { listSessionsApi } from '../../src/ui/sessions.js';
import { freePort } from '../support/ports.js';

const TOKEN = 'menu-bot-live-token-51d0';
const ALICE = '79001112233@c.us';
const BOB = '79002223344@c.us';
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
      - { phone: 79002223344, name: Bob }
  instances:
    - idInstance: "1101000001"
      apiTokenInstance: ${TOKEN}
      sendIntervalMs: 500
      rateLimits: { getChatHistory: 0 }
store: { driver: lowdb, dir: .msgflow/state }
`;

describe('the menu bot under msgflow start (local service over HTTP, lowdb)', () => {
  it('two chats at once each get their own dialog; msgflow sessions lists, shows and resets them', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'msgflow-menu-'));
    cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
    mkdirSync(path.join(dir, 'flows'));
    mkdirSync(path.join(dir, 'public'));
    copyFileSync(path.join(REPO, 'flows/welcome.yaml'), path.join(dir, 'flows/welcome.yaml'));
    copyFileSync(path.join(REPO, 'public/brochure.pdf'), path.join(dir, 'public/brochure.pdf'));
    writeFileSync(path.join(dir, 'config.yaml'), config(await freePort()));

    const loaded = loadConfig(path.join(dir, 'config.yaml'));
    const clock = new ManualClock(Date.parse('2026-01-05T09:00:00Z'));
    const runtime = await createRuntime({ config: loaded, command: 'start', listen: true, clock });
    let closed = false;
    const close = async () => {
      if (closed) return;
      closed = true;
      await whileTimePasses(clock, () => consumers.stop());
      await runtime.close();
    };
    const { flows, errors } = runtime.flows();
    expect(errors).toEqual([]);
    const consumers = await startNotificationConsumers({ ...runtime, flows, identityFor: (n) => identityOf(loaded, n), logger });
    cleanups.push(close);

    const url = runtime.localUrl!;
    const send = async (chatId: string, m: Record<string, unknown>) => {
      const res = await fetch(`${url}/_local/waInstance1101000001/incoming/${TOKEN}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ chatId, ...m }),
      });
      expect(res.status).toBe(200);
    };
    const say = (chatId: string, text: string) => send(chatId, { typeMessage: 'textMessage', textMessage: text });
    const client = createClient({ apiUrl: url, idInstance: '1101000001', apiTokenInstance: TOKEN, rateLimit: false, retries: 0 });
    cleanups.push(() => client.close());
    const bot = async (chatId: string) =>
      (await client.getChatHistory({ chatId, count: 50 })).filter((m: Message) => m.type === 'outgoing').reverse();
    const botSaid = (chatId: string, n: number) =>
      waitFor(`${n} bot messages in ${chatId}`, async () => {
        await clock.advance(1000);
        const out = await bot(chatId);
        return out.length >= n ? out : undefined;
      });

    // Both chats open a session at once; each gets its menu.
    await Promise.all([say(ALICE, 'hi'), say(BOB, 'Menu')]);
    const [aliceMenu] = await botSaid(ALICE, 1);
    await botSaid(BOB, 1);
    expect(aliceMenu!.interactiveButtonsReply?.buttons.map((b) => b.buttonId)).toEqual(['brochure', 'person']);
    // Alice presses Brochure and gives her address; Bob asks for a person meanwhile.
    await send(ALICE, {
      typeMessage: 'buttonsResponseMessage',
      buttonsResponseMessage: { stanzaId: aliceMenu!.idMessage, selectedButtonId: 'brochure', selectedButtonText: 'Brochure' },
    });
    await say(BOB, '2');
    await botSaid(ALICE, 2);
    await say(ALICE, 'alice@example.com');
    const alice = await botSaid(ALICE, 4);
    expect(alice.slice(2).map((m) => [m.typeMessage, m.fileName ?? m.textMessage])).toEqual([
      ['documentMessage', 'brochure.pdf'],
      ['textMessage', 'Thank you! We will also write to alice@example.com. Write MENU any time to start again.'],
    ]);
    expect((await botSaid(BOB, 2))[1]!.textMessage).toBe('A colleague will answer you here shortly.');
    const runs = await waitFor('every run to end', async () => {
      const all = await runtime.engine.listRuns({ flow: 'welcome' });
      return all.length === 5 && all.every((r) => r.status === 'succeeded') ? all : undefined;
    });
    expect(runs.every((r) => r.trigger === 'notification')).toBe(true);
    // What the dashboard's Sessions page shows (GET /api/sessions): each chat's state, vars, last lines; Bob waits for a human.
    const page = await listSessionsApi(runtime);
    expect(page.sessions.map((x) => [x.chatId, x.state, x.status]).sort()).toEqual([
      [ALICE, 'brochure', 'ended'],
      [BOB, 'menu', 'handover'],
    ]);
    expect(page.sessions.find((x) => x.chatId === ALICE)).toMatchObject({ instance: 'default', vars: { email: 'alice@example.com' } });
    expect(page.handovers).toMatchObject([{ chatId: BOB, instance: 'default', by: 'dialog' }]);
    await close();

    const list = await cli(['sessions'], dir);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(/^CHAT\s+FLOW\s+STATE\s+STATUS\s+LAST$/m);
    expect(list.stdout).toMatch(/^79001112233@c\.us\s+welcome\s+brochure\s+ended \(end\)/m);
    expect(list.stdout).toMatch(/^79002223344@c\.us\s+welcome\s+menu\s+handed over/m);
    const show = await cli(['sessions', 'show', '+7 900 111-22-33'], dir);
    expect(show.stdout).toContain('history:  menu > email');
    expect(show.stdout).toContain('vars:     {"email":"alice@example.com"}');
    expect(show.stdout).toMatch(/user {2}alice@example\.com\n.*bot {3}\(file\) brochure\.pdf/);
    const json = JSON.parse((await cli(['sessions', '--json', '--flow', 'welcome'], dir)).stdout) as { chatId: string }[];
    expect(json.map((s) => s.chatId).sort()).toEqual([ALICE, BOB]);
    const reset = await cli(['sessions', 'reset', BOB], dir);
    expect(reset).toMatchObject({ code: 0, stdout: expect.stringContaining('reset: welcome with 79002223344@c.us (was in menu)') });
    expect((await cli(['sessions', 'show', BOB], dir)).code).toBe(1);
    expect((await cli(['sessions', 'reset', BOB], dir)).stderr).toContain('no session with 79002223344@c.us');
    expect((await cli(['sessions', 'frob'], dir)).code).toBe(2);
  }, 180_000);
});
