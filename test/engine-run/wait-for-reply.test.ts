import { describe, expect, it } from 'vitest';
import { waitForReply } from '../../src/actions/wait-for-reply.js';
import { chatPosition, firstReply } from '../../src/engine/notify/records.js';
import { CONSUMERS_NS, INCOMING_NS, sharedState } from '../../src/engine/shared.js';
import { NotificationDispatcher } from '../../src/engine/notify/dispatcher.js';
import { parseNotification } from '../../src/engine/notify/body.js';
import type { Flow } from '../../src/engine/flow/types.js';
import type { RunHandle, StartOptions } from '../../src/engine/run/types.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import { ManualClock } from '../../src/util/clock.js';
import { flow, recordEvents, registryWith, step, testEngine } from './helpers.js';

const logger = { debug() {}, info() {}, warn() {}, error() {} };
const START = Date.parse('2026-01-05T09:00:00Z');

function replyBody(text: string, at: number) {
  return {
    typeWebhook: 'incomingMessageReceived',
    instanceData: { idInstance: 1101000001, wid: '79990000000@c.us', typeInstance: 'whatsapp' },
    timestamp: Math.floor(at / 1000),
    idMessage: `R-${at}`,
    senderData: { chatId: '79001112233@c.us', chatName: 'Alice', sender: '79001112233@c.us', senderName: 'Alice', senderContactName: '' },
    messageData: { typeMessage: 'textMessage', textMessageData: { textMessage: text } },
  };
}

async function setup() {
  const clock = new ManualClock(START);
  const t = testEngine(registryWith(waitForReply), { clock, identityFor: () => 'local-abc' });
  await sharedState(t.store, CONSUMERS_NS).set('local-abc', { instance: 'default', mode: 'poll', since: START - 1000 });
  const d = new NotificationDispatcher({ ...t, clock, flows: [], identityFor: () => 'local-abc', logger });
  const f = flow([step({ id: 'ask', uses: 'waitForReply', with: { chatId: '79001112233', timeout: '10m', poll: '5s' } })], { name: 'ask' });
  const events = recordEvents(t.bus);
  // Recorded before the wait begins: never its reply.
  await d.dispatch('default', reply('an old message', START - 60_000));
  const { done } = await t.engine.start(f);
  while (clock.pending === 0) await new Promise((r) => setTimeout(r, 2));
  return { clock, t, d, done, events };
}

describe('waitForReply', () => {
  it("outputs the chat's first message recorded after the wait began; one recorded before does not count", async () => {
    const { clock, t, d, done, events } = await setup();
    await clock.advance(60_000);
    await d.dispatch('default', reply('Yes, please', clock.now()));
    await d.dispatch('default', reply('and a second one', clock.now() + 1000));
    await clock.advance(5_000);
    const run = await done;
    expect(run.status).toBe('succeeded');
    const [s] = await t.engine.getSteps(run.id);
    expect(s!.output).toMatchObject({ outcome: 'replied', chatId: '79001112233@c.us', text: 'Yes, please', typeMessage: 'textMessage' });
    // One wait until the deadline, said once (not a waiting/resumed pair per poll); its end is the deadline.
    const waiting = events.filter(([n]) => n === 'run:waiting');
    expect(waiting).toHaveLength(1);
    expect(waiting[0]![1]).toMatchObject({ reason: 'a reply from 79001112233@c.us', until: Date.parse('2026-01-05T09:10:00.000Z') });
  });

  it('ends with outcome timeout at the deadline when nobody answers', async () => {
    const { clock, t, done } = await setup();
    for (let i = 0; i < 130 && clock.pending > 0; i++) await clock.advance(5_000);
    const run = await done;
    expect(run.status).toBe('succeeded');
    const [s] = await t.engine.getSteps(run.id);
    expect(s!.output).toEqual({ outcome: 'timeout', chatId: '79001112233@c.us', waitedMs: 600_000 });
    expect(run.finishedAt).toBe(START + 600_000);
  });
});

/** Until the run sleeps on the clock (its wait), or has ended (then the test's next expectation tells why). */
async function untilWaiting(clock: ManualClock, done?: Promise<unknown>): Promise<void> {
  let ended = false;
  void done?.then(() => (ended = true));
  while (clock.pending === 0 && !ended) await new Promise((r) => setTimeout(r, 2));
}

/** An incoming message of Alice's chat, as the service notifies it (`at`: its timestamp, ms). */
/** As the consumer parses what it receives. */
function reply(text: string, at: number) {
  return parseNotification(replyBody(text, at))!;
}

function message(text: string, idMessage: string, at: number) {
  return parseNotification({ ...replyBody(text, at), idMessage })!;
}

/** The welcome bot's shape: a notification starts the run, which waits for the same chat's reply. */
const welcome = (withReply: Record<string, unknown> = {}) =>
  flow(
    [
      step({
        id: 'answer',
        uses: 'waitForReply',
        with: { chatId: '${{ event.senderData.chatId }}', timeout: '10m', poll: '1s', ...withReply },
      }),
    ],
    {
      name: 'welcome',
      on: {
        overlap: 'skip',
        missed: 'none',
        startup: false,
        notification: { type: 'incomingMessageReceived', text: '^(hi|menu)$', instance: 'default' },
      },
    },
  );

/** An engine whose notification dispatcher starts `f`; `runs` collects the handles of the runs it starts. */
async function triggered(f: ReturnType<typeof welcome>) {
  const clock = new ManualClock(START);
  const t = testEngine(registryWith(waitForReply), { clock, identityFor: () => 'local-abc' });
  await sharedState(t.store, CONSUMERS_NS).set('local-abc', { instance: 'default', mode: 'poll', since: START - 1000 });
  const runs: RunHandle[] = [];
  const engine = { start: async (fl: Flow, o?: StartOptions) => t.engine.start(fl, o).then((h) => (runs.push(h), h)) };
  const d = new NotificationDispatcher({ ...t, engine, clock, flows: [f], identityFor: () => 'local-abc', logger });
  const waiting = () => untilWaiting(clock, runs[0]?.done);
  const outputOf = async (h: RunHandle) => {
    const run = await h.done;
    return { run, output: (await t.engine.getSteps(run.id)).find((s) => s.step === 'answer')?.output as Record<string, unknown> };
  };
  return { clock, t, d, runs, waiting, outputOf };
}

describe('waitForReply: what counts as the reply', () => {
  it('never takes the message that triggered the run, though it arrived in the same second the wait began', async () => {
    const { clock, d, runs, waiting, outputOf } = await triggered(welcome());
    expect(await d.dispatch('default', message('hi', 'TRIGGER-HI-0001', START))).toBe(1);
    await waiting();
    // Nothing else came: the wait goes on past a poll.
    await clock.advance(1000);
    await waiting();
    await d.dispatch('default', message('1', 'REPLY-ONE-00001', clock.now()));
    await clock.advance(1000);
    const { run, output } = await outputOf(runs[0]!);
    expect(run.status).toBe('succeeded');
    expect(output).toMatchObject({ outcome: 'replied', text: '1', idMessage: 'REPLY-ONE-00001' });
  });

  it('decides by the order the consumer recorded the chat, never by timestamps', async () => {
    const { clock, d, runs, waiting, outputOf } = await triggered(welcome());
    // Stamped a minute ahead (a clock that is off), recorded before the wait began: not a reply.
    await d.dispatch('default', message('from the future', 'EARLY-BUT-AHEAD', START + 60_000));
    await d.dispatch('default', message('menu', 'TRIGGER-MENU-001', START));
    await waiting();
    // Recorded after the wait began, stamped a minute behind (a late delivery): the reply.
    await d.dispatch('default', message('late but after', 'LATE-BUT-AFTER1', START - 60_000));
    await clock.advance(1000);
    const { output } = await outputOf(runs[0]!);
    expect(output).toMatchObject({ outcome: 'replied', text: 'late but after' });
  });

  it('after: a message id counts only what was recorded after that message (the trigger itself never)', async () => {
    const { clock, d, runs, waiting, outputOf } = await triggered(welcome({ after: '${{ event.idMessage }}' }));
    const startedBefore = clock.now();
    await d.dispatch('default', message('hi', 'TRIGGER-HI-0002', startedBefore));
    await waiting();
    await d.dispatch('default', message('2', 'REPLY-TWO-00002', clock.now()));
    await clock.advance(1000);
    expect((await outputOf(runs[0]!)).output).toMatchObject({ outcome: 'replied', text: '2' });
  });

  it('after: a message id counts a reply recorded before the wait began (a run that waited for its slot)', async () => {
    const clock = new ManualClock(START);
    const t = testEngine(registryWith(waitForReply), { clock, identityFor: () => 'local-abc' });
    await sharedState(t.store, CONSUMERS_NS).set('local-abc', { instance: 'default', mode: 'poll', since: START - 1000 });
    const d = new NotificationDispatcher({ ...t, clock, flows: [], identityFor: () => 'local-abc', logger });
    await d.dispatch('default', message('hi', 'ASKED-FIRST-0001', START));
    await d.dispatch('default', message('1', 'ANSWERED-QUICK01', START));
    const f = flow(
      [step({ id: 'answer', uses: 'waitForReply', with: { chatId: '79001112233', after: 'ASKED-FIRST-0001', timeout: '1m' } })],
      { name: 'late' },
    );
    const run = await (await t.engine.start(f)).done;
    const [s] = await t.engine.getSteps(run.id);
    expect(s!.output).toMatchObject({ outcome: 'replied', text: '1', idMessage: 'ANSWERED-QUICK01' });
  });

  it('after: a time counts messages the service stamped at or after it, the trigger excepted', async () => {
    const { clock, d, runs, waiting, outputOf } = await triggered(welcome({ after: new Date(START - 30_000).toISOString() }));
    await d.dispatch('default', message('too old', 'BEFORE-THE-TIME1', START - 60_000));
    await d.dispatch('default', message('in time', 'AFTER-THE-TIME01', START - 20_000));
    await d.dispatch('default', message('hi', 'TRIGGER-HI-0003', START));
    await waiting();
    await clock.advance(1000);
    expect((await outputOf(runs[0]!)).output).toMatchObject({ outcome: 'replied', text: 'in time' });
  });

  it('after: a message id the chat never recorded fails the step, naming it and the chat', async () => {
    const clock = new ManualClock(START);
    const t = testEngine(registryWith(waitForReply), { clock, identityFor: () => 'local-abc' });
    const f = flow([step({ id: 'answer', uses: 'waitForReply', with: { chatId: '79001112233', after: 'NEVER-SEEN-00001' } })], {
      name: 'unknown',
    });
    const run = await (await t.engine.start(f)).done;
    expect(run.status).toBe('failed');
    expect(run.error?.message).toMatch(/after: message NEVER-SEEN-00001 is not an incoming message recorded for chat 79001112233@c\.us/);
  });

  it('a resumed run keeps its reference point: a reply recorded while msgflow was down counts, one from before does not', async () => {
    const clock = new ManualClock(START);
    const store = createMemoryStore();
    const first = testEngine(registryWith(waitForReply), { clock, store, identityFor: () => 'local-abc' });
    await sharedState(store, CONSUMERS_NS).set('local-abc', { instance: 'default', mode: 'poll', since: START - 1000 });
    const d = new NotificationDispatcher({ ...first, clock, flows: [], identityFor: () => 'local-abc', logger });
    await d.dispatch('default', message('before the question', 'BEFORE-QUESTION1', START + 5_000));
    const f = flow([step({ id: 'answer', uses: 'waitForReply', with: { chatId: '79001112233', timeout: '10m', poll: '5s' } })], {
      name: 'ask',
    });
    const { runId, done } = await first.engine.start(f);
    await untilWaiting(clock, done);
    await first.engine.shutdown('restart');
    await d.dispatch('default', message('while you were away', 'WHILE-AWAY-00001', START - 5_000));
    const second = testEngine(registryWith(waitForReply), { clock, store, identityFor: () => 'local-abc' });
    const [resumed] = await second.engine.resumeUnfinished([f]);
    expect(resumed!.runId).toBe(runId);
    await clock.advance(5_000);
    const run = await resumed!.done;
    const [s] = await second.engine.getSteps(run.id);
    expect(s!.output).toMatchObject({ outcome: 'replied', text: 'while you were away' });
  });
});

describe('recorded incoming messages', () => {
  it('a chat recorded before messages were numbered keeps its stored order, and new messages come after it', async () => {
    const t = testEngine(registryWith(waitForReply));
    const kv = sharedState(t.store, INCOMING_NS);
    // As an earlier version stored it: no seq, no lastSeq, oldest first.
    await kv.set('local-abc:79001112233@c.us', {
      messages: [
        { idMessage: 'OLDER-MESSAGE-01', at: START - 2000, text: 'a' },
        { idMessage: 'OLDER-MESSAGE-02', at: START - 1000, text: 'b' },
      ],
    });
    expect(await chatPosition(kv, 'local-abc', '79001112233@c.us')).toBe(2);
    const d = new NotificationDispatcher({ ...t, clock: new ManualClock(START), flows: [], identityFor: () => 'local-abc', logger });
    await d.dispatch('default', message('c', 'NEWER-MESSAGE-03', START - 5000));
    expect(await firstReply(kv, 'local-abc', '79001112233@c.us', { afterSeq: 2 })).toMatchObject({ idMessage: 'NEWER-MESSAGE-03', seq: 3 });
    expect(await firstReply(kv, 'local-abc', '79001112233@c.us', { afterSeq: 0 })).toMatchObject({ idMessage: 'OLDER-MESSAGE-01', seq: 1 });
  });
});
