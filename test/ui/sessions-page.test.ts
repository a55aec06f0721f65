/**
 * The dashboard's Sessions page in a real headless Chromium, over the menu
 * bot (flows/welcome.yaml, as shipped) run by `msgflow start`'s wiring: the
 * local service over HTTP, the notification consumers, a lowdb store, a
 * ManualClock. Two people write through the local service's admin
 * `incoming` endpoint; the operator writes to one of them from the phone
 * (`conversations: { handover: { quiet: 30m } }`). The page shows each chat's
 * state, history and vars, the handed-over chat under "Waiting for a human",
 * and what a further message changed once reloaded.
 */
import { copyFileSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createUiServer } from '../../src/ui/server.js';
import { listSessionsApi } from '../../src/ui/sessions.js';
import { haveChromium, launchChromium } from '../support/chromium.js';
import { waitFor } from '../support/wait.js';
import { ALICE, BOB, configYaml, startProject, T0, TOKEN, type Project } from '../conversation/support.js';
import { REPO } from '../conversation/helpers.js';
import { freePort } from '../support/ports.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

/** A project folder with the shipped menu bot and its brochure (served by the local service from public/). */
async function menuBotProject(): Promise<string> {
  const dir = mkdtempSync(path.join(tmpdir(), 'msgflow-sessions-page-'));
  mkdirSync(path.join(dir, 'flows'));
  mkdirSync(path.join(dir, 'public'));
  copyFileSync(path.join(REPO, 'flows/welcome.yaml'), path.join(dir, 'flows/welcome.yaml'));
  copyFileSync(path.join(REPO, 'public/brochure.pdf'), path.join(dir, 'public/brochure.pdf'));
  const config = configYaml(await freePort(), 'conversations: { handover: { quiet: 30m } }\n').replace(
    '  dataDir: .msgflow/local\n',
    '  dataDir: .msgflow/local\n  staticDir: public\n',
  );
  writeFileSync(path.join(dir, 'config.yaml'), config);
  return dir;
}

/** Until the dialog of `chat` is in `state` with `status`, and no run of the bot is left going (its messages are sent). */
function dialogIn(p: Project, chat: string, state: string, status: string): Promise<unknown> {
  return waitFor(`${chat} in ${state} (${status})`, async () => {
    await p.clock.advance(1000);
    const s = (await listSessionsApi(p.runtime)).sessions.find((x) => x.chatId === chat);
    const runs = await p.runtime.engine.listRuns({ flow: 'welcome' });
    return s?.state === state && s.status === status && runs.every((r) => r.status === 'succeeded');
  });
}

describe.skipIf(!haveChromium())('the Sessions page', () => {
  it('shows each chat of the menu bot with its state and vars, the handed-over chat waiting for a human, and a further message after a reload', async () => {
    const dir = await menuBotProject();
    const p = await startProject({}, '', { dir, at: T0 });
    cleanups.push(() => p.close());
    const server = await createUiServer({ runtime: p.runtime, port: 0, pollMs: 200, recentMs: 200, reloadMs: 200 });
    cleanups.push(() => server.close());
    const browser = await launchChromium({ width: 1280, height: 800 });
    cleanups.push(() => browser.close());

    // Alice goes the brochure way to its end; Bob opens the menu, then the operator writes to him from the phone.
    await Promise.all([p.say(ALICE, 'hi'), p.say(BOB, 'Menu')]);
    await dialogIn(p, ALICE, 'menu', 'active');
    await dialogIn(p, BOB, 'menu', 'active');
    await p.say(ALICE, '1');
    await dialogIn(p, ALICE, 'email', 'active');
    await p.say(ALICE, 'alice@example.com');
    await dialogIn(p, ALICE, 'brochure', 'ended');
    await p.say(BOB, 'I will take this one', { outgoing: true });
    await waitFor('the handover of Bob', async () => {
      await p.clock.advance(1000);
      return (await p.runtime.store.kv('shared:handover').entries()).length === 1;
    });

    const page = await browser.context.newPage();
    await page.goto(`${server.url}/#/sessions`);
    const row = (chat: string) => page.locator(`tr[data-session="${chat} welcome"]`);
    await row(ALICE).waitFor({ timeout: 5000 });
    await row(BOB).waitFor({ timeout: 5000 });
    expect(await page.locator('header nav a.active').getAttribute('data-page')).toBe('sessions');

    const cell = (what: string, chat: string) => page.locator(`td[data-${what}="${chat}"]`).innerText();
    expect(await cell('state', ALICE)).toBe('brochure\nmenu > email');
    expect(await cell('status', ALICE)).toBe('ended (end)');
    expect(await cell('vars', ALICE)).toBe('{"email":"alice@example.com"}');
    expect(await row(ALICE).innerText()).toContain('user: alice@example.com');
    expect(await row(ALICE).innerText()).toContain('bot: Thank you! We will also write to alice@example.com.');
    expect(await cell('state', BOB)).toBe('menu');
    // Handed over by the operator before Bob's session heard of it (it does at his next message).
    expect(await cell('status', BOB)).toBe('handed over');
    expect(await cell('vars', BOB)).toBe('-');
    expect(await row(BOB).innerText()).toContain('user: Menu');

    // Bob waits for a human, by the operator's hand, for the quiet time after the operator's message.
    const waiting = page.locator('ul[data-handovers] li');
    expect(await waiting.count()).toBe(1);
    const bob = await page.locator(`li[data-handover="${BOB}"]`).innerText();
    expect(bob).toMatch(/^79002223344@c\.us \(default, operator, until 2026-03-02 09:\d\d:\d\d UTC\)/);
    // Nothing secret on the page.
    const all = await page.locator('body').innerText();
    expect(all).not.toContain(TOKEN);
    expect(all).not.toContain('1101000001');

    // Alice writes MENU again: a new dialog, in the menu; the page shows it once reloaded.
    await p.say(ALICE, 'MENU');
    await dialogIn(p, ALICE, 'menu', 'active');
    await page.reload();
    await page.locator(`td[data-state="${ALICE}"]`).filter({ hasNotText: 'brochure' }).waitFor({ timeout: 5000 });
    expect(await cell('state', ALICE)).toBe('menu');
    expect(await cell('status', ALICE)).toBe('active');
    expect(await row(ALICE).innerText()).toContain('user: MENU');
    // The newest activity comes first.
    const order = await page.locator('tr[data-session]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-session')));
    expect(order).toEqual([`${ALICE} welcome`, `${BOB} welcome`]);

    // Bob's idle time comes while the operator has his chat: his session waits (it says handover) and so does the page.
    const bobIdleAt = (await listSessionsApi(p.runtime)).sessions.find((x) => x.chatId === BOB)!.idleAt!;
    await p.clock.advance(bobIdleAt - p.clock.now());
    await dialogIn(p, BOB, 'menu', 'handover');
    await page.reload();
    await page.locator(`li[data-handover="${BOB}"]`).waitFor({ timeout: 5000 });
    expect(await cell('status', BOB)).toBe('handed over');
    // Once the quiet time is over the chat is the bot's again (its session still says handover until its next event).
    const [[, h]] = await p.runtime.store.kv('shared:handover').entries<{ until: number }>();
    await p.clock.advance(h!.until - p.clock.now() + 1);
    await page.reload();
    await page.getByText('No chat is handed over.').waitFor({ timeout: 5000 });
    expect(await cell('status', BOB)).toBe('active');
    expect(await cell('status', ALICE)).toBe('active');
    await page.close();
  }, 30_000);
});
