import { describe, expect, it } from 'vitest';
import { NOTIFICATION_RUNS_NS, NotificationDispatcher, notificationRunId } from '../../src/engine/notify/dispatcher.js';
import { firstReply } from '../../src/engine/notify/records.js';
import { INCOMING_NS, sharedState } from '../../src/engine/shared.js';
import { notificationKey, parseNotification } from '../../src/engine/notify/body.js';
import type { Flow } from '../../src/engine/flow/types.js';
import { action, flow, registryWith, step, testEngine } from './helpers.js';

const logger = { debug() {}, info() {}, warn() {}, error() {} };

function incoming(text: string, idMessage: string, chatId = '79001112233@c.us') {
  // Parsed as the consumer parses what it receives.
  return parseNotification({
    typeWebhook: 'incomingMessageReceived',
    instanceData: { idInstance: 1101000001, wid: '79990000000@c.us', typeInstance: 'whatsapp' },
    timestamp: 1767600000,
    idMessage,
    senderData: { chatId, chatName: 'Alice', sender: chatId, senderName: 'Alice', senderContactName: '' },
    messageData: { typeMessage: 'textMessage', textMessageData: { textMessage: text } },
  })!;
}

function stopFlow(over: Partial<Flow> = {}): Flow {
  return flow(
    [
      step({
        id: 'note',
        uses: 'note',
        with: { chatId: '${{ event.senderData.chatId }}', text: '${{ event.messageData.textMessageData.textMessage }}' },
      }),
    ],
    {
      name: 'on-stop',
      on: {
        overlap: 'skip',
        missed: 'none',
        startup: false,
        notification: { type: 'incomingMessageReceived', text: '^(stop|unsubscribe)$', instance: 'default' },
      },
      ...over,
    },
  );
}

describe('notification dispatcher', () => {
  it('starts one run per notification even when it is delivered again, with the notification as event', async () => {
    const seen: unknown[] = [];
    const t = testEngine(registryWith(action('note', async (_ctx, input) => void seen.push(input))));
    const received: unknown[] = [];
    t.bus.on('notification:received', (e) => received.push(e));
    const d = new NotificationDispatcher({
      ...t,
      clock: { now: () => 1767600001000, sleep: async () => {} },
      flows: [stopFlow()],
      identityFor: () => 'local-abc',
      logger,
    });
    expect(await d.dispatch('default', incoming(' Stop ', 'M1'))).toBe(1);
    // The same notification again (the process died before deleteNotification): nothing new starts.
    expect(await d.dispatch('default', incoming(' Stop ', 'M1'))).toBe(0);
    // Not matching the pattern, and another instance's notification: no run.
    expect(await d.dispatch('default', incoming('stop it', 'M2'))).toBe(0);
    expect(await d.dispatch('other', incoming('stop', 'M3'))).toBe(0);
    const runs = await t.engine.listRuns({ flow: 'on-stop' });
    expect(runs).toHaveLength(1);
    const run = (await Promise.all(runs.map((r) => t.engine.getRun(r.id))))[0]!;
    expect(run.trigger).toBe('notification');
    expect(run.id).toBe(notificationRunId('on-stop', 'local-abc', notificationKey(incoming(' Stop ', 'M1'))));
    expect((run.event as { instanceData: Record<string, unknown> }).instanceData).toEqual({
      wid: '79990000000@c.us',
      typeInstance: 'whatsapp',
    });
    await new Promise((r) => setTimeout(r, 50));
    expect(seen).toEqual([{ chatId: '79001112233@c.us', text: ' Stop ' }]);
    expect(received).toEqual([
      { instance: 'default', type: 'incomingMessageReceived', lagMs: 1000, flowsStarted: 1 },
      { instance: 'default', type: 'incomingMessageReceived', lagMs: 1000, flowsStarted: 0 },
      { instance: 'default', type: 'incomingMessageReceived', lagMs: 1000, flowsStarted: 0 },
      { instance: 'other', type: 'incomingMessageReceived', lagMs: 1000, flowsStarted: 0 },
    ]);
    // Every incoming message is kept for waitForReply, matched or not.
    const reply = await firstReply(sharedState(t.store, INCOMING_NS), 'local-abc', '79001112233@c.us', { afterSeq: 0 });
    expect(reply).toMatchObject({ idMessage: 'M1', seq: 1, text: ' Stop ' });
  });

  it('queues a run whose concurrency slot (its chat) is busy, and starts an intent left by a crash exactly once', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const calls: string[] = [];
    const slow = {
      ...action('note', async (_ctx, input) => {
        calls.push(String(input.chatId));
        if (calls.length === 1) await gate;
      }),
      writes: true,
    };
    const t = testEngine(registryWith(slow));
    const opts = {
      ...t,
      clock: { now: () => 1767600001000, sleep: async () => {} },
      flows: [stopFlow()],
      identityFor: () => 'local-abc',
      logger,
    };
    const d = new NotificationDispatcher(opts);
    await d.dispatch('default', incoming('STOP', 'A', '111111111@c.us'));
    // The same chat again: a writing flow runs one at a time per chat.
    await d.dispatch('default', incoming('STOP', 'B', '111111111@c.us'));
    expect(await t.engine.listRuns()).toHaveLength(1);
    expect(await t.store.kv(NOTIFICATION_RUNS_NS).entries()).toHaveLength(1);
    release();
    await Promise.all(
      t.engine.activeRuns().map(async (r) => {
        while ((await t.engine.getRun(r.id))?.status === 'running') await new Promise((x) => setTimeout(x, 5));
      }),
    );
    // A new process (another dispatcher on the same store) finds the intent and starts it; a redelivery starts nothing more.
    const d2 = new NotificationDispatcher(opts);
    await d2.startPending();
    await d2.dispatch('default', incoming('STOP', 'B', '111111111@c.us'));
    await d2.startPending();
    expect(await t.engine.listRuns()).toHaveLength(2);
    expect(await t.store.kv(NOTIFICATION_RUNS_NS).entries()).toHaveLength(0);
    await new Promise((r) => setTimeout(r, 50));
    expect(calls).toEqual(['111111111@c.us', '111111111@c.us']);
  });
});
