/**
 * Per-chat runs under `msgflow start`'s wiring (local service over HTTP,
 * consumers, flows from YAML, ManualClock): a notification flow that writes
 * runs one at a time per chat by default, so one chat's waiting run never
 * holds up another chat; messages of one chat start their runs in the order
 * they came; and a chat the operator writes to from the phone is left to the
 * human for the quiet time, or until the resume command.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { NOTIFICATION_SKIPPED_NS, type SkippedRun } from '../../src/engine/notify/pending.js';
import { waitFor } from '../support/wait.js';
import { ALICE, BOB, T0, startProject, type Project } from './support.js';

/** A flow of examples/conversations (the files docs/notifications.md shows). */
const example = (name: string) => readFileSync(path.join(import.meta.dirname, '../../examples/conversations/flows', name), 'utf8');
/** examples/conversations/flows/ask.yaml, with more top-level keys. */
const ask = (extra = '') => example('ask.yaml').replace('\nsteps:', `\n${extra}\nsteps:`);

let p: Project | undefined;
afterEach(async () => {
  await p?.close();
  p = undefined;
});

/** Until the engine clock has moved on while `f` is not true yet (what the tests wait for happens on that clock). */
function until<T>(pr: Project, what: string, f: () => Promise<T>): Promise<NonNullable<T>> {
  return waitFor(what, async () => {
    await pr.clock.advance(1000);
    return f();
  });
}

/** Until the chat's run waits for its answer: a message said before that is not the answer. */
function waiting(pr: Project, chat: string): Promise<unknown> {
  return until(pr, `the run of ${chat} to wait for its answer`, async () =>
    (await pr.runtime.engine.listRuns({ flow: 'ask' })).some((r) => r.status === 'waiting' && r.waitReason === `a reply from ${chat}`),
  );
}

/** Until `chat` has been sent `texts` (advancing the engine clock so waits poll). */
async function sentUntil(pr: Project, chat: string, texts: string[]): Promise<void> {
  let got: string[] = [];
  await waitFor(
    `${chat} to be sent ${JSON.stringify(texts)}`,
    async () => {
      await pr.clock.advance(1000);
      got = await pr.sent(chat);
      return JSON.stringify(got) === JSON.stringify(texts);
    },
    { context: () => `sent: ${JSON.stringify(got)}` },
  );
}

describe('per-chat runs of a notification flow', () => {
  it("never holds up another chat behind one chat's waiting run, and starts one chat's runs in the order its messages came", async () => {
    p = await startProject({ 'ask.yaml': ask() });
    await p.say(ALICE, 'hi');
    await sentUntil(p, ALICE, ['menu for Alice']);
    await waiting(p, ALICE);
    // Alice's run waits for her answer (up to 10 minutes): Bob is answered at once all the same.
    await p.say(BOB, 'hi');
    await sentUntil(p, BOB, ['menu for Bob']);
    await waiting(p, BOB);
    // Alice's second hi is the first run's answer, and starts her second run only once the first has ended.
    await p.say(ALICE, 'hi');
    await sentUntil(p, ALICE, ['menu for Alice', 'got hi', 'menu for Alice']);
    await p.say(BOB, 'thanks');
    await sentUntil(p, BOB, ['menu for Bob', 'got thanks']);
    const runs = await p.runtime.engine.listRuns({ flow: 'ask' });
    expect(runs.map((r) => r.concurrencyKey).sort()).toEqual([ALICE, ALICE, BOB]);
  });

  it('shares one slot between every chat with a constant key', async () => {
    p = await startProject({ 'ask.yaml': ask('concurrency: { key: all, max: 1 }') });
    await p.say(ALICE, 'hi');
    await sentUntil(p, ALICE, ['menu for Alice']);
    await waiting(p, ALICE);
    await p.say(BOB, 'hi');
    // Bob waits behind Alice's run (10 seconds of engine time pass meanwhile, unanswered).
    for (let i = 0; i < 10; i++) await p.clock.advance(1000);
    expect(await p.sent(BOB)).toEqual([]);
    await p.say(ALICE, 'yes');
    await sentUntil(p, ALICE, ['menu for Alice', 'got yes']);
    await sentUntil(p, BOB, ['menu for Bob']);
  });
});

describe('human handover', () => {
  const handover = 'conversations: { handover: { quiet: 30m, resume: "^#bot$" } }';

  async function skipped(pr: Project, n: number): Promise<SkippedRun[]> {
    return until(pr, `${n} skipped run(s)`, async () => {
      const all = (await pr.runtime.store.kv(NOTIFICATION_SKIPPED_NS).entries<SkippedRun>()).map(([, s]) => s);
      return all.length === n ? all : undefined;
    });
  }

  it('keeps the bot quiet in a chat the operator wrote to from the phone, for the quiet time, and says why', async () => {
    p = await startProject({ 'ask.yaml': ask() }, handover);
    await p.say(ALICE, 'I will take this one', { outgoing: true });
    const h = await until(p, 'the handover', async () => (await p!.runtime.store.kv('shared:handover').entries())[0]);
    expect(h[1]).toMatchObject({ instance: 'default', chatId: ALICE, by: 'operator' });
    await p.say(ALICE, 'hi');
    const [s] = await skipped(p, 1);
    expect(s).toMatchObject({ flow: 'ask', instance: 'default', chatId: ALICE });
    expect(s!.reason).toMatch(
      /^the chat is handed over to a human \(operator: the operator wrote from the phone, until 2026-03-02T09:30:00.000Z\)$/,
    );
    // Other chats are the bot's as before.
    await p.say(BOB, 'hi');
    await sentUntil(p, BOB, ['menu for Bob']);
    expect(await p.sent(ALICE)).toEqual(['I will take this one']);
    // 30 minutes after the operator's last message, the chat is the bot's again.
    await p.clock.advance(30 * 60_000 - (p.clock.now() - T0));
    await p.say(ALICE, 'hi');
    await sentUntil(p, ALICE, ['I will take this one', 'menu for Alice']);
  });

  it("gives the chat back at the operator's resume command; a flow that ignores handovers runs all along", async () => {
    const audit = `name: audit
on:
  notification: { type: incomingMessageReceived, handover: ignore }
steps:
  - id: note
    uses: log
    with: { message: "seen \${{ event.messageData.textMessageData.textMessage }}" }
`;
    p = await startProject({ 'ask.yaml': ask(), 'audit.yaml': audit }, handover);
    await p.say(ALICE, 'hello, a human here', { outgoing: true });
    await until(p, 'the handover', async () => (await p!.runtime.store.kv('shared:handover').entries()).length === 1);
    await p.say(ALICE, 'hi');
    await skipped(p, 1);
    await p.say(ALICE, '#bot', { outgoing: true });
    await until(p, 'the handover to end', async () => (await p!.runtime.store.kv('shared:handover').entries()).length === 0);
    await p.say(ALICE, 'hi');
    await sentUntil(p, ALICE, ['hello, a human here', '#bot', 'menu for Alice']);
    const audits = await until(p, 'two audit runs', async () => {
      const r = await p!.runtime.engine.listRuns({ flow: 'audit' });
      return r.length === 2 ? r : undefined;
    });
    expect(audits).toHaveLength(2);
  });

  it('hands a chat over from a flow (chat.handover) and gives it back (chat.release)', async () => {
    p = await startProject({ 'ask.yaml': ask(), 'desk.yaml': example('desk.yaml'), 'back.yaml': example('back.yaml') });
    await p.say(ALICE, 'operator');
    const h = await until(p, 'the handover', async () => (await p!.runtime.store.kv('shared:handover').entries())[0]);
    const rec = h[1] as { chatId: string; by: string; reason: string; since: number; until: number };
    expect(rec).toMatchObject({ chatId: ALICE, by: 'api', reason: 'asked for a human' });
    expect(rec.until - rec.since).toBe(10 * 60_000);
    await p.say(ALICE, 'hi');
    const [s] = await skipped(p, 1);
    expect(s!.reason).toMatch(/handed over to a human \(api: asked for a human, until /);
    await p.say(ALICE, 'bot please');
    await until(p, 'the handover to end', async () => (await p!.runtime.store.kv('shared:handover').entries()).length === 0);
    await p.say(ALICE, 'hi');
    await sentUntil(p, ALICE, ['menu for Alice']);
  });
});
