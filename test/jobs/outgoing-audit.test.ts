import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { outgoingAudit, OutgoingAuditInput } from '../../src/actions/outgoing-audit.js';
import { ManualClock } from '../../src/util/clock.js';
import { createActionTestContext } from '../../src/actions/testing.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import { ID, TOKEN, startLocal, tempDir, type LocalUnderTest } from '../support/local-service.js';

const T0 = Date.parse('2026-01-05T09:00:00Z');
const MIN = 60_000;

let open: LocalUnderTest[] = [];
afterEach(async () => {
  await Promise.all(open.map((l) => l.close()));
  open = [];
});

async function inject(l: LocalUnderTest, m: Record<string, unknown>) {
  const res = await fetch(`${l.url}/_local/waInstance${ID}/incoming/${TOKEN}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ type: 'outgoing', ...m }),
  });
  expect(res.status, await res.clone().text()).toBe(200);
}

const doc = (chatId: string, at: number, extra: Record<string, unknown> = {}) => ({
  chatId,
  typeMessage: 'documentMessage',
  fileName: 'brochure.pdf',
  timestamp: Math.floor(at / 1000),
  sendByApi: true,
  ...extra,
});

describe('outgoing.audit', () => {
  it('counts by status, type and origin, stores each audit, reports the trend and fires on a threshold crossing', async () => {
    const dir = await tempDir();
    const clock = new ManualClock(T0);
    const l = await startLocal({ dir, clock });
    open.push(l);
    const store = createMemoryStore();
    const audit = (id: string) =>
      outgoingAudit.run(
        createActionTestContext({ client: l.client, clock, store, baseDir: dir, runId: id }).ctx,
        OutgoingAuditInput.parse({
          minutes: 60,
          notDeliveredAfter: '10m',
          notReadAfter: '15m',
          thresholds: { notDelivered: 2 },
          report: `reports/${id}.json`,
        }),
      );

    await inject(l, doc('79001112233@c.us', T0 - 20 * MIN, { statusMessage: 'read' }));
    await inject(l, doc('79002223344@c.us', T0 - 20 * MIN, { statusMessage: 'sent' }));
    await inject(l, doc('79003334455@c.us', T0 - 2 * MIN, { statusMessage: 'sent' })); // too young to count
    await inject(l, {
      chatId: '79001112233@c.us',
      typeMessage: 'textMessage',
      textMessage: 'hi',
      timestamp: Math.floor((T0 - 16 * MIN) / 1000),
      sendByApi: false,
      statusMessage: 'delivered',
    });
    await inject(l, doc('79004445566@c.us', T0 - 90 * MIN, { statusMessage: 'sent' })); // outside the window

    const a1 = await audit('a1');
    expect(a1).toMatchObject({
      total: 4,
      byStatus: { sent: 2, delivered: 1, read: 1 },
      byType: { documentMessage: 3, textMessage: 1 },
      byOrigin: { api: 3, device: 1 },
      uniqueRecipients: 3,
      notDelivered: 1,
      notRead: 2,
      trend: null,
      thresholdsCrossed: [],
    });
    expect(a1.notDeliveredMessages[0]).toMatchObject({ chatId: '79002223344@c.us', statusMessage: 'sent', ageMs: 20 * MIN });

    await clock.advance(10 * MIN);
    await inject(l, doc('79006660001@c.us', T0 - 1 * MIN, { statusMessage: 'sent' }));
    await inject(l, doc('79006660002@c.us', T0 + 5 * MIN, { statusMessage: 'read' }));
    const t2 = createActionTestContext({ client: l.client, clock, store, baseDir: dir, runId: 'a2' });
    const ctx2 = t2.ctx;
    const a2 = await outgoingAudit.run(
      ctx2,
      OutgoingAuditInput.parse({ minutes: 60, notDeliveredAfter: '10m', notReadAfter: '15m', thresholds: { notDelivered: 2 } }),
    );
    expect(a2).toMatchObject({ total: 6, notDelivered: 3, uniqueRecipients: 5 });
    expect(a2.trend).toMatchObject({
      previousAt: new Date(T0).toISOString(),
      total: 2,
      notDelivered: 2,
      byStatus: { sent: 1, delivered: 0, read: 1 },
    });
    expect(a2.thresholdsCrossed).toEqual([{ metric: 'notDelivered', value: 3, threshold: 2, direction: 'above' }]);
    expect(t2.events).toEqual([
      { name: 'audit.threshold', payload: expect.objectContaining({ metric: 'notDelivered', direction: 'above', instance: 'default' }) },
    ]);

    // a re-run of the same step (after a crash) returns the stored audit, not a trend against itself
    const again = await outgoingAudit.run(ctx2, OutgoingAuditInput.parse({ minutes: 60 }));
    expect(again).toEqual(a2);
    // The trend is kept per instance identity, not per config name
    const stored = await store.kv('shared:audit:inst-test').entries('a:');
    expect(stored).toHaveLength(2);

    const report = JSON.parse(await readFile(path.join(dir, 'reports/a1.json'), 'utf8'));
    expect(report.summary.total).toBe(4);
    expect(report.rows.map((r: { lag: string }) => r.lag).sort()).toEqual(['notDelivered', 'notRead', 'notRead']);
  });

  it('counts a message the journal says went nowhere (noAccount, notInGroup, yellowCard) as that, never as lagging', async () => {
    const dir = await tempDir();
    const clock = new ManualClock(T0);
    const l = await startLocal({ dir, clock });
    open.push(l);
    // A real send to a number nobody has: its journal status is noAccount, not sent.
    const { idMessage } = await l.client.sendMessage({ chatId: '79009990000@c.us', message: 'hello?' });
    expect(await l.settled(idMessage)).toBe('sent');
    await inject(l, doc('79001112233@c.us', T0 - 20 * MIN, { statusMessage: 'notInGroup' }));
    await inject(l, doc('79002223344@c.us', T0 - 20 * MIN, { statusMessage: 'yellowCard' }));
    await inject(l, doc('79003334455@c.us', T0 - 20 * MIN, { statusMessage: 'sent' }));
    await clock.advance(30 * MIN);
    const journal = await l.client.lastOutgoingMessages({ minutes: 60 });
    expect(journal.find((m) => m.idMessage === idMessage)?.statusMessage).toBe('noAccount');
    const result = await outgoingAudit.run(
      createActionTestContext({ client: l.client, clock, store: createMemoryStore(), baseDir: dir, runId: 'n1' }).ctx,
      OutgoingAuditInput.parse({ minutes: 60, notDeliveredAfter: '10m', notReadAfter: '15m' }),
    );
    expect(result.byStatus).toEqual({ sent: 1, delivered: 0, read: 0, noAccount: 1, notInGroup: 1, yellowCard: 1 });
    expect(result.notDeliveredMessages.map((m) => m.chatId)).toEqual(['79003334455@c.us']);
    expect(result.notDelivered).toBe(1);
  });
});
