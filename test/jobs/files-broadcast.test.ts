import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { filesBroadcast, FilesBroadcastInput } from '../../src/actions/index.js';
import type { RecipientRecord } from '../../src/actions/index.js';
import { ManualClock, systemClock } from '../../src/util/clock.js';
import { Durables, makeContext } from './helpers/context.js';
import { drainQueue, startFileServer, startLocal, tempDir, writeData, type LocalUnderTest } from './helpers/local.js';

let files: { url: string; close(): Promise<void> };
beforeAll(async () => void (files = await startFileServer()));
afterAll(() => files.close());
let open: LocalUnderTest[] = [];
afterEach(async () => {
  await Promise.all(open.map((l) => l.close()));
  open = [];
});

const RECIPIENTS = `phone,firstName
79001112233,Alice
+7 900 222-33-44,Bob
not-a-number,Broken
79003334455,Carol
79001112233,Alice again
`;

const input = (over: Record<string, unknown> = {}) =>
  FilesBroadcastInput.parse({
    file: 'data/recipients.csv',
    urlFile: `${files.url}/brochure.pdf`,
    fileName: 'brochure.pdf',
    caption: 'Hello ${{ item.firstName }}',
    follow: { deadline: '8s', poll: '250ms', until: 'read' },
    reconcile: { sendInterval: 500, grace: 1000, clockSkew: 2000 },
    report: 'reports/broadcast.csv',
    ...over,
  });

/** Outgoing file messages per chat, as the service's history has them. */
async function sentPerChat(l: LocalUnderTest, chats: string[]) {
  const out: Record<string, string[]> = {};
  for (const chatId of chats) {
    const h = await l.client.getChatHistory({ chatId });
    out[chatId] = h.filter((m) => m.type === 'outgoing' && m.typeMessage === 'documentMessage').map((m) => m.caption ?? '');
  }
  return out;
}

const CHATS = ['79001112233@c.us', '79002223344@c.us', '79003334455@c.us'];

describe('files.broadcast', () => {
  it('sends once per recipient with a caption per recipient, follows statuses to read, and reports', async () => {
    const dir = await tempDir();
    await writeData(dir, 'data/recipients.csv', RECIPIENTS);
    const l = await startLocal({ dir, clock: systemClock });
    open.push(l);
    const ctx = makeContext({ client: l.client, clock: systemClock, durables: new Durables(), baseDir: dir });
    const s = await filesBroadcast.run(ctx, input());
    expect(s).toMatchObject({ total: 5, recipients: 3, duplicates: 1, invalid: 1, sent: 3, read: 3, delivered: 3, failed: 0, notSent: 0, reconciled: 0 });
    expect(await sentPerChat(l, CHATS)).toEqual({
      '79001112233@c.us': ['Hello Alice'],
      '79002223344@c.us': ['Hello Bob'],
      '79003334455@c.us': ['Hello Carol'],
    });
    const csv = await readFile(path.join(dir, 'reports/broadcast.csv'), 'utf8');
    expect(csv.match(/,sent,/g)).toHaveLength(3);
    expect(csv).toMatch(/not-a-number|row 3.*invalid/);
    expect(ctx.progressLog.at(-1)).toMatchObject({ done: 3, total: 3, failed: 0 });

    // the same run resumed (e.g. the engine re-ran the step) sends nothing again
    const before = l.requests.filter((r) => r.method === 'sendFileByUrl').length;
    const again = await filesBroadcast.run(makeContext({ client: l.client, clock: systemClock, durables: ctx.state === undefined ? new Durables() : (ctxDurables(ctx) as Durables), baseDir: dir }), input());
    expect(again.sent).toBe(3);
    expect(l.requests.filter((r) => r.method === 'sendFileByUrl').length).toBe(before);
  });

  it('reports a message the service accepted but never sent (its file could not be fetched) as failed, not sent', async () => {
    const dir = await tempDir();
    await writeData(dir, 'data/recipients.csv', 'phone,firstName\n79001112233,Alice\n79002223344,Bob\n');
    const l = await startLocal({ dir, clock: systemClock });
    open.push(l);
    const ctx = makeContext({ client: l.client, clock: systemClock, durables: new Durables(), baseDir: dir });
    const s = await filesBroadcast.run(ctx, input({ urlFile: "http://127.0.0.1:9/brochure.pdf" }));
    expect(s).toMatchObject({ recipients: 2, sent: 0, failed: 2 });
    const csv = await readFile(path.join(dir, 'reports/broadcast.csv'), 'utf8');
    expect(csv.match(/,failed,/g)).toHaveLength(2);
    expect(csv).toMatch(/but never sent/);
  });

  it('reconciles an interrupted send: a queued message with no recorded idMessage is found, not sent twice; a send that never left is sent', async () => {
    const dir = await tempDir();
    await writeData(dir, 'data/recipients.csv', RECIPIENTS);
    // a slow queue, so the lost message is still queued (invisible in history) when the job resumes
    const l = await startLocal({ dir, clock: systemClock, config: undefined });
    open.push(l);
    const durables = new Durables();
    const now = Date.now();
    // Alice: sent and recorded. Bob: the call went out, the process died before the record.
    // Carol: the intent was recorded, the process died before the call.
    const alice = await l.client.sendFileByUrl({ chatId: CHATS[0]!, urlFile: `${files.url}/brochure.pdf`, fileName: 'brochure.pdf', caption: 'Hello Alice' });
    await durables.step.set(`r:${CHATS[0]}`, { chatId: CHATS[0]!, where: 'x', caption: 'Hello Alice', phase: 'sent', attemptKey: 'a', intentAt: now, idMessage: alice.idMessage, sentAt: now, status: 'sent' } satisfies RecipientRecord);
    await durables.step.set(`r:${CHATS[1]}`, { chatId: CHATS[1]!, where: 'x', caption: 'Hello Bob', phase: 'intent', attemptKey: 'b', intentAt: Date.now() } satisfies RecipientRecord);
    await l.client.sendFileByUrl({ chatId: CHATS[1]!, urlFile: `${files.url}/brochure.pdf`, fileName: 'brochure.pdf', caption: 'Hello Bob' });
    await durables.step.set(`r:${CHATS[2]}`, { chatId: CHATS[2]!, where: 'x', caption: 'Hello Carol', phase: 'intent', attemptKey: 'c', intentAt: Date.now() } satisfies RecipientRecord);

    const ctx = makeContext({ client: l.client, clock: systemClock, durables, baseDir: dir });
    const s = await filesBroadcast.run(ctx, input({ follow: { deadline: 0 } }));
    expect(s).toMatchObject({ sent: 3, reconciled: 1, failed: 0, notSent: 0 });
    await drainQueue(l);
    expect(await sentPerChat(l, CHATS)).toEqual({
      '79001112233@c.us': ['Hello Alice'],
      '79002223344@c.us': ['Hello Bob'],
      '79003334455@c.us': ['Hello Carol'],
    });
    const bob = await durables.step.get<RecipientRecord>(`r:${CHATS[1]}`);
    expect(bob).toMatchObject({ phase: 'sent', reconciled: true });
    expect(bob!.idMessage).toMatch(/^[0-9A-F]{16,}$/);
  });

  it('waits durably for the window to open, and past its end stops and reports the rest as not sent', async () => {
    const dir = await tempDir();
    await writeData(dir, 'data/recipients.csv', RECIPIENTS);
    const clock = new ManualClock(Date.parse('2026-01-05T07:00:00Z'));
    const l = await startLocal({ dir, clock });
    open.push(l);
    const ctx = makeContext({ client: l.client, clock, durables: new Durables(), baseDir: dir });
    const p = filesBroadcast.run(ctx, input({ window: { start: '09:00', stop: '17:00', timezone: 'UTC' }, follow: { deadline: 0 } }));
    await ctx.waiting;
    expect(ctx.waits[0]).toMatchObject({ until: Date.parse('2026-01-05T09:00:00Z'), reason: expect.stringMatching(/window/) });
    expect(l.requests).toHaveLength(0);
    await clock.advance(2 * 3_600_000);
    expect(await p).toMatchObject({ sent: 3 });

    const late = makeContext({ client: l.client, clock, durables: new Durables(), baseDir: dir, runId: 'late' });
    await clock.advance(9 * 3_600_000); // 18:00
    const s = await filesBroadcast.run(late, input({ window: { start: '09:00', stop: '17:00', timezone: 'UTC' }, report: 'reports/late.json' }));
    expect(s).toMatchObject({ sent: 0, notSent: 3 });
    const report = JSON.parse(await readFile(path.join(dir, 'reports/late.json'), 'utf8'));
    expect(report.rows.filter((r: { outcome: string }) => r.outcome === 'notSent')[0].error).toBe('send window closed');
  });

  it('a dry run evaluates and validates every caption and sends nothing', async () => {
    const dir = await tempDir();
    const l = await startLocal({ dir, clock: systemClock });
    open.push(l);
    const ctx = makeContext({ client: l.client, clock: systemClock, durables: new Durables(), baseDir: dir, dryRun: true });
    const long = 'x'.repeat(1100);
    const s = await filesBroadcast.run(ctx, input({ file: undefined, recipients: [{ phone: '79001112233', firstName: 'Al' }, { phone: '79002223344', firstName: long }], report: 'reports/dry.json' }));
    expect(s).toMatchObject({ recipients: 1, invalid: 1, notSent: 1, sent: 0 });
    expect(l.requests).toHaveLength(0);
    const report = JSON.parse(await readFile(path.join(dir, 'reports/dry.json'), 'utf8'));
    expect(report.rows.find((r: { outcome: string }) => r.outcome === 'invalid').error).toMatch(/caption/);
  });
});

function ctxDurables(ctx: ReturnType<typeof makeContext>): Durables {
  const d = new Durables();
  Object.assign(d, { step: ctx.state });
  return d;
}
