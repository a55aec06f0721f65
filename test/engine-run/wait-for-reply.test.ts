import { describe, expect, it } from 'vitest';
import { waitForReply } from '../../src/actions/wait-for-reply.js';
import { CONSUMERS_NS, sharedState } from '../../src/engine/notify/records.js';
import { NotificationDispatcher } from '../../src/engine/notify/dispatcher.js';
import { ManualClock } from '../../src/util/clock.js';
import { flow, recordEvents, registryWith, step, testEngine } from './helpers.js';

const logger = { debug() {}, info() {}, warn() {}, error() {} };
const START = Date.parse('2026-01-05T09:00:00Z');

function reply(text: string, at: number) {
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
  const { done } = await t.engine.start(f);
  while (clock.pending === 0) await new Promise((r) => setTimeout(r, 2));
  return { clock, t, d, done, events };
}

describe('waitForReply', () => {
  it("outputs the chat's first message after the wait began; an older one does not count", async () => {
    const { clock, t, d, done, events } = await setup();
    await d.dispatch('default', reply('an old message', START - 60_000));
    await clock.advance(60_000);
    await d.dispatch('default', reply('Yes, please', clock.now()));
    await d.dispatch('default', reply('and a second one', clock.now() + 1000));
    await clock.advance(5_000);
    const run = await done;
    expect(run.status).toBe('succeeded');
    const [s] = await t.engine.getSteps(run.id);
    expect(s!.output).toMatchObject({ outcome: 'replied', chatId: '79001112233@c.us', text: 'Yes, please', typeMessage: 'textMessage' });
    expect(
      events.some(
        ([n, e]) => n === 'run:waiting' && /waiting for a reply from 79001112233@c.us until 2026-01-05T09:10:00.000Z/.test(e.reason),
      ),
    ).toBe(true);
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
