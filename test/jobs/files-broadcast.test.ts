import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { filesBroadcast } from '../../src/actions/files-broadcast.js';
import type { RecipientRecord } from '../../src/actions/broadcast-records.js';
import { createActionTestContext, runAction } from '../../src/actions/testing.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import { ManualClock } from '../../src/util/clock.js';
import { VirtualClock } from '../../src/util/virtual-clock.js';
import type { FileServer } from '../support/file-server.js';
import {
  drainQueue,
  localConfig,
  startPdfServer,
  tempDir,
  writeData,
  type LocalUnderTest,
  closedAfterEach,
} from '../support/local-service.js';

let files: FileServer;
beforeAll(async () => void (files = await startPdfServer()));
afterAll(() => files.close());
const { local, virtualClock: startedClock } = closedAfterEach();

/**
 * The service (its send queue's intervals, delivered/read timings) and the
 * job (its polls, deadlines, reconciliation) on one VirtualClock, as
 * `msgflow test` runs them: time jumps whenever both wait on it, so the
 * seconds these scenarios span pass in no wall time, in the same order.
 */
function virtualClock(): VirtualClock {
  return startedClock(Date.now());
}

const RECIPIENTS = `phone,firstName
79001112233,Alice
+7 900 222-33-44,Bob
not-a-number,Broken
79003334455,Carol
79001112233,Alice again
`;

const input = (over: Record<string, unknown> = {}) => ({
  file: 'data/recipients.csv',
  urlFile: files.url('/brochure.pdf'),
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

/** The tests' local service where every number starting with `prefix` has an account (a message to one without is noAccount). */
function withAccounts(prefix: string) {
  const base = localConfig();
  return { ...base, network: { ...base.network, population: [{ prefix, share: 1 }] } };
}
const sends = (l: LocalUnderTest) => l.requests.filter((r) => r.method === 'sendFileByUrl').length;

describe('files.broadcast', () => {
  it('sends once per recipient with a caption per recipient, follows statuses to read, and reports', async () => {
    const dir = await tempDir();
    await writeData(dir, 'data/recipients.csv', RECIPIENTS);
    const clock = virtualClock();
    const l = await local({ dir, clock });
    const store = createMemoryStore();
    const t = createActionTestContext({ client: l.client, clock, store, baseDir: dir });
    const s = await runAction(filesBroadcast, t, input());
    expect(s).toMatchObject({
      total: 5,
      recipients: 3,
      duplicates: 1,
      invalid: 1,
      sent: 3,
      read: 3,
      delivered: 3,
      failed: 0,
      unknown: 0,
      notSent: 0,
      reconciled: 0,
    });
    expect(await sentPerChat(l, CHATS)).toEqual({
      '79001112233@c.us': ['Hello Alice'],
      '79002223344@c.us': ['Hello Bob'],
      '79003334455@c.us': ['Hello Carol'],
    });
    const csv = await readFile(path.join(dir, 'reports/broadcast.csv'), 'utf8');
    expect(csv.match(/,sent,/g)).toHaveLength(3);
    expect(csv).toMatch(/recipients\.csv:4,.*invalid/);
    expect(t.progress.at(-1)).toMatchObject({ done: 3, total: 5, failed: 0, invalid: 1, duplicate: 1, skipped: 0 });

    // the same run resumed (e.g. the engine re-ran the step) sends nothing again
    const before = sends(l);
    const again = await runAction(filesBroadcast, createActionTestContext({ client: l.client, clock, store, baseDir: dir }), input());
    expect(again.sent).toBe(3);
    expect(sends(l)).toBe(before);
  });

  it("a recipient without an account fails with the journal's noAccount, not sent and not unknown", async () => {
    const dir = await tempDir();
    await writeData(dir, 'data/recipients.csv', 'phone,firstName\n79001112233,Alice\n79009990000,Nobody\n');
    const clock = virtualClock();
    const l = await local({ dir, clock });
    const t = createActionTestContext({ client: l.client, clock, store: createMemoryStore(), baseDir: dir });
    const s = await runAction(filesBroadcast, t, input());
    const csv = await readFile(path.join(dir, 'reports/broadcast.csv'), 'utf8');
    expect(csv).toMatch(/79009990000@c\.us,[^\n]*,failed,[^\n]*noAccount: the service's journal says the message went nowhere/);
    expect(csv).toMatch(/79001112233@c\.us,[^\n]*,sent,/);
    expect(s).toMatchObject({ recipients: 2, sent: 1, read: 1, failed: 1, unknown: 0 });
    expect(t.progress.at(-1)).toMatchObject({ failed: 1 });
  });

  it('a message accepted but never seen sent is reported unknown (not failed, not sent) and not sent again', async () => {
    const dir = await tempDir();
    await writeData(dir, 'data/recipients.csv', 'phone,firstName\n79001112233,Alice\n79002223344,Bob\n');
    const clock = virtualClock();
    // A file host that answers only after the follow deadline: the messages stay queued, neither sent nor failed.
    const base = localConfig();
    const l = await local({ dir, clock, config: { ...base, network: { ...base.network, fileHostDelayMs: 3_600_000 } } });
    const store = createMemoryStore();
    const bad = input({ urlFile: 'http://127.0.0.1:9/brochure.pdf', follow: { deadline: '1s', poll: '250ms' }, campaign: 'spring' });
    const s = await runAction(filesBroadcast, createActionTestContext({ client: l.client, clock, store, baseDir: dir }), bad);
    expect(s).toMatchObject({ recipients: 2, sent: 0, failed: 0, unknown: 2 });
    const csv = await readFile(path.join(dir, 'reports/broadcast.csv'), 'utf8');
    expect(csv.match(/,unknown,/g)).toHaveLength(2);
    expect(csv).toMatch(/not seen sent/);
    // a later run of the same campaign never sends them again
    const before = sends(l);
    const later = await runAction(
      filesBroadcast,
      createActionTestContext({ client: l.client, clock, store, baseDir: dir, runId: 'run-2' }),
      bad,
    );
    expect(later).toMatchObject({ unknown: 2, sent: 0 });
    expect(sends(l)).toBe(before);
  });

  it('reconciliation decides per recipient from the service: a lost answer is found; an intent in neither the send queue nor the history once the journal lag passed is sent again, once, saying why', async () => {
    const dir = await tempDir();
    await writeData(dir, 'data/recipients.csv', RECIPIENTS);
    const clock = virtualClock();
    const l = await local({ dir, clock });
    const t = createActionTestContext({ client: l.client, clock, baseDir: dir });
    const now = clock.now();
    // Alice: sent and recorded. Bob: the call went out, the process died before the record.
    // Carol: the intent was recorded, the process died before the call: the service never got it.
    const alice = await l.client.sendFileByUrl({
      chatId: CHATS[0]!,
      urlFile: files.url('/brochure.pdf'),
      fileName: 'brochure.pdf',
      caption: 'Hello Alice',
    });
    await t.ctx.state.set(`r:${CHATS[0]}`, {
      chatId: CHATS[0]!,
      where: 'x',
      caption: 'Hello Alice',
      phase: 'sent',
      runId: 'run-1',
      attemptKey: 'a',
      intentAt: now,
      idMessage: alice.idMessage,
      sentAt: now,
      status: 'sent',
    } satisfies RecipientRecord);
    await t.ctx.state.set(`r:${CHATS[1]}`, {
      chatId: CHATS[1]!,
      where: 'x',
      caption: 'Hello Bob',
      phase: 'intent',
      runId: 'run-1',
      attemptKey: 'b',
      intentAt: clock.now(),
    } satisfies RecipientRecord);
    await l.client.sendFileByUrl({
      chatId: CHATS[1]!,
      urlFile: files.url('/brochure.pdf'),
      fileName: 'brochure.pdf',
      caption: 'Hello Bob',
    });
    await t.ctx.state.set(`r:${CHATS[2]}`, {
      chatId: CHATS[2]!,
      where: 'x',
      caption: 'Hello Carol',
      phase: 'intent',
      runId: 'run-1',
      attemptKey: 'c',
      intentAt: clock.now(),
    } satisfies RecipientRecord);

    const resumedAt = clock.now();
    const s = await runAction(filesBroadcast, t, input({ follow: { deadline: 0 } }));
    expect(s).toMatchObject({ sent: 3, reconciled: 1, resent: 1, failed: 0, unknown: 0, notSent: 0 });
    await drainQueue(l);
    expect(await sentPerChat(l, CHATS)).toEqual({
      '79001112233@c.us': ['Hello Alice'],
      '79002223344@c.us': ['Hello Bob'],
      '79003334455@c.us': ['Hello Carol'],
    });
    const bob = await t.ctx.state.get<RecipientRecord>(`r:${CHATS[1]}`);
    expect(bob).toMatchObject({ phase: 'sent', reconciled: true });
    expect(bob!.idMessage).toMatch(/^[0-9A-F]{16,}$/);
    const carol = await t.ctx.state.get<RecipientRecord>(`r:${CHATS[2]}`);
    const why =
      'an interrupted send was in neither the send queue nor the chat history 120s after: it never reached the service; sent again';
    expect(carol).toMatchObject({ phase: 'sent', resent: why });
    // Not before the journal lag (2 minutes by default) had passed since it was first found missing.
    const [carolMessage] = await l.client.getChatHistory({ chatId: CHATS[2]! });
    expect(carolMessage!.timestamp * 1000).toBeGreaterThanOrEqual(resumedAt + 120_000 - 1000);
    const csv = await readFile(path.join(dir, 'reports/broadcast.csv'), 'utf8');
    expect(csv.split(/\r?\n/)[0]).toBe('chatId,where,outcome,idMessage,status,sentAt,deliveredAt,readAt,reconciled,resent,caption,error');
    expect(csv).toContain(`79003334455@c.us,data/recipients.csv:5,sent,${carol!.idMessage},sent,`);
    expect(csv).toContain(`,${why},Hello Carol,`);
  });

  it('an interrupted send found in the send queue is sent already: not sent again, whatever the journal lag', async () => {
    const dir = await tempDir();
    const clock = virtualClock();
    // One release an hour: the message stays queued, out of the chat history.
    const l = await local({ dir, clock, config: localConfig({}, { sendIntervalMs: 3_600_000 }) });
    const t = createActionTestContext({ client: l.client, clock, baseDir: dir });
    await l.client.sendMessage({ chatId: CHATS[0]!, message: 'first in the queue: released at once' });
    await t.ctx.state.set(`r:${CHATS[1]}`, {
      chatId: CHATS[1]!,
      where: 'x',
      caption: 'Hello Bob',
      phase: 'intent',
      runId: 'run-1',
      attemptKey: 'b',
      intentAt: clock.now(),
    } satisfies RecipientRecord);
    await l.client.sendFileByUrl({
      chatId: CHATS[1]!,
      urlFile: files.url('/brochure.pdf'),
      fileName: 'brochure.pdf',
      caption: 'Hello Bob',
    });
    const before = sends(l);
    const s = await runAction(
      filesBroadcast,
      t,
      input({
        file: undefined,
        recipients: [{ phone: '79002223344', firstName: 'Bob' }],
        follow: { deadline: 0 },
        reconcile: { journalLag: '1s' },
      }),
    );
    expect(s).toMatchObject({ sent: 1, reconciled: 1, resent: 0, unknown: 0 });
    expect(sends(l)).toBe(before);
    const queue = (await l.admin('queue')).body as { pending: { chatId: string }[] };
    expect(queue.pending.map((e) => e.chatId)).toEqual([CHATS[1]]);
  });

  it('lookups slower than the poll still decide: an interrupted send missing from the service is sent again once its lag has passed, not given up as unknown', async () => {
    const dir = await tempDir();
    const clock = virtualClock();
    const l = await local({ dir, clock });
    // Every history read takes 1.2 s of the clock (a busy service, a rate-limited method): longer than the poll.
    const slow: typeof l.client = {
      ...l.client,
      getChatHistory: async (...args) => {
        await clock.sleep(1200);
        return l.client.getChatHistory(...args);
      },
    };
    const t = createActionTestContext({ client: slow, clock, baseDir: dir });
    await t.ctx.state.set(`r:${CHATS[2]}`, {
      chatId: CHATS[2]!,
      where: 'x',
      caption: 'Hello Carol',
      phase: 'intent',
      runId: 'run-1',
      attemptKey: 'c',
      intentAt: clock.now(),
    } satisfies RecipientRecord);
    const s = await runAction(
      filesBroadcast,
      t,
      input({
        file: undefined,
        recipients: [{ phone: '79003334455', firstName: 'Carol' }],
        follow: { deadline: 0 },
        reconcile: { sendInterval: 500, grace: 1000, clockSkew: 2000, journalLag: '1s' },
      }),
    );
    expect(s).toMatchObject({ sent: 1, resent: 1, unknown: 0 });
    await drainQueue(l);
    expect(await sentPerChat(l, [CHATS[2]!])).toEqual({ '79003334455@c.us': ['Hello Carol'] });
  });

  it('a send again that is itself interrupted and found nowhere is unknown: a recipient is never sent a third time', async () => {
    const dir = await tempDir();
    const clock = virtualClock();
    const l = await local({ dir, clock });
    const t = createActionTestContext({ client: l.client, clock, baseDir: dir });
    await t.ctx.state.set(`r:${CHATS[2]}`, {
      chatId: CHATS[2]!,
      where: 'x',
      caption: 'Hello Carol',
      phase: 'intent',
      runId: 'run-1',
      attemptKey: 'c2',
      intentAt: clock.now(),
      resent: 'an interrupted send was in neither the send queue nor the chat history 120s after: it never reached the service; sent again',
    } satisfies RecipientRecord);
    const s = await runAction(
      filesBroadcast,
      t,
      input({ file: undefined, recipients: [{ phone: '79003334455', firstName: 'Carol' }], follow: { deadline: 0 } }),
    );
    expect(s).toMatchObject({ sent: 0, unknown: 1, resent: 1 });
    expect(sends(l)).toBe(0);
    expect(await t.ctx.state.get<RecipientRecord>(`r:${CHATS[2]}`)).toMatchObject({ phase: 'unknown' });
  });

  it('after a crash with messages of ours queued ahead, the lost send is found when the queue reaches it; none reported failed', async () => {
    const dir = await tempDir();
    const recipients = Array.from({ length: 7 }, (_, i) => ({ phone: `7900666100${i}`, firstName: `R${i}` }));
    const chats = recipients.map((r) => `${r.phone}@c.us`);
    const clock = virtualClock();
    const l = await local({ dir, clock, config: withAccounts('790066610') });
    const t = createActionTestContext({ client: l.client, clock, baseDir: dir });
    const send = (i: number) =>
      l.client.sendFileByUrl({ chatId: chats[i]!, urlFile: files.url('/brochure.pdf'), fileName: 'brochure.pdf', caption: `Hello R${i}` });
    // six sent and recorded, still in the send queue (500 ms apart); the seventh sent, its answer lost in the crash
    for (let i = 0; i < 6; i++) {
      const { idMessage } = await send(i);
      const at = clock.now();
      await t.ctx.state.set(`r:${chats[i]}`, {
        chatId: chats[i]!,
        where: 'x',
        caption: `Hello R${i}`,
        phase: 'sent',
        runId: 'run-1',
        attemptKey: `a${i}`,
        intentAt: at,
        idMessage,
        sentAt: at,
        status: 'sent',
      } satisfies RecipientRecord);
    }
    await t.ctx.state.set(`r:${chats[6]}`, {
      chatId: chats[6]!,
      where: 'x',
      caption: 'Hello R6',
      phase: 'intent',
      runId: 'run-1',
      attemptKey: 'a6',
      intentAt: clock.now(),
    } satisfies RecipientRecord);
    await send(6);

    const s = await runAction(
      filesBroadcast,
      t,
      input({
        file: undefined,
        recipients,
        follow: { deadline: '1s', poll: '250ms', until: 'delivered' },
        reconcile: { sendInterval: 500, grace: 500, clockSkew: 2000 },
      }),
    );
    expect(s).toMatchObject({ recipients: 7, sent: 7, reconciled: 1, failed: 0, unknown: 0 });
    await drainQueue(l);
    const perChat = await sentPerChat(l, chats);
    expect(Object.values(perChat).map((c) => c.length)).toEqual([1, 1, 1, 1, 1, 1, 1]);
  });

  it('the follow deadline extends with the queue ahead: a long queue is not reported failed', async () => {
    const dir = await tempDir();
    const recipients = Array.from({ length: 8 }, (_, i) => ({ phone: `7900666000${i}`, firstName: `R${i}` }));
    const clock = virtualClock();
    const l = await local({ dir, clock, config: withAccounts('790066600') });
    // 8 messages at a 500 ms send interval take 4 s to leave the queue; the deadline is 1 s
    const start = clock.now();
    const s = await runAction(
      filesBroadcast,
      createActionTestContext({ client: l.client, clock, baseDir: dir }),
      input({
        file: undefined,
        recipients,
        follow: { deadline: '1s', poll: '250ms', until: 'delivered' },
        reconcile: { sendInterval: 500, grace: 500, clockSkew: 2000 },
      }),
    );
    expect(s).toMatchObject({ recipients: 8, sent: 8, failed: 0, unknown: 0 });
    // the premise, on the clock the queue and the job share: the queue outlasted the 1 s deadline
    expect(clock.now() - start).toBeGreaterThan(3500);
  });

  it('waits durably for the window to open', async () => {
    const dir = await tempDir();
    await writeData(dir, 'data/recipients.csv', RECIPIENTS);
    const clock = new ManualClock(Date.parse('2026-01-05T07:00:00Z'));
    const l = await local({ dir, clock });
    const t = createActionTestContext({ client: l.client, clock, baseDir: dir });
    const p = runAction(filesBroadcast, t, input({ window: { start: '09:00', stop: '17:00', timezone: 'UTC' }, follow: { deadline: 0 } }));
    const w = await t.waiting;
    expect(w).toMatchObject({ until: Date.parse('2026-01-05T09:00:00Z'), reason: 'send window opens at 2026-01-05T09:00:00.000Z' });
    expect(l.requests).toHaveLength(0);
    await clock.advance(2 * 3_600_000);
    expect(await p).toMatchObject({ sent: 3 });
  });

  it('a daily window that has closed for today waits durably for the next opening, not notSent', async () => {
    const dir = await tempDir();
    await writeData(dir, 'data/recipients.csv', RECIPIENTS);
    const clock = new ManualClock(Date.parse('2026-01-05T18:00:00Z'));
    const l = await local({ dir, clock });
    const t = createActionTestContext({ client: l.client, clock, baseDir: dir });
    const p = runAction(filesBroadcast, t, input({ window: { start: '09:00', stop: '17:00', timezone: 'UTC' }, follow: { deadline: 0 } }));
    const w = await t.waiting;
    expect(w).toMatchObject({ until: Date.parse('2026-01-06T09:00:00Z'), reason: 'send window opens at 2026-01-06T09:00:00.000Z' });
    expect(await t.store.listWaits('run-1')).toHaveLength(1); // durable: a restart finds it
    expect(t.progress.at(-1)).toMatchObject({ done: 0, waiting: 1 });
    expect(sends(l)).toBe(0);
    await clock.advance(15 * 3_600_000);
    expect(await p).toMatchObject({ sent: 3, notSent: 0 });

    // an absolute window that is over for good: nothing to wait for
    const late = createActionTestContext({ client: l.client, clock, baseDir: dir, runId: 'late' });
    const s = await runAction(
      filesBroadcast,
      late,
      input({ window: { start: '2026-01-01T09:00:00Z', stop: '2026-01-01T17:00:00Z' }, report: 'reports/late.json' }),
    );
    expect(s).toMatchObject({ sent: 0, notSent: 3 });
  });

  it('a dry run evaluates and validates every caption, predicts wouldSend, and sends nothing', async () => {
    expect(filesBroadcast.dryRun).toBe(true);
    const dir = await tempDir();
    const clock = virtualClock();
    const l = await local({ dir, clock });
    const t = createActionTestContext({ client: l.client, clock, baseDir: dir, dryRun: true });
    const long = 'x'.repeat(1100);
    const s = await runAction(
      filesBroadcast,
      t,
      input({
        file: undefined,
        recipients: [
          { phone: '79001112233', firstName: 'Al' },
          { phone: '79002223344', firstName: long },
        ],
        report: 'reports/dry.json',
      }),
    );
    expect(s).toMatchObject({ recipients: 1, invalid: 1, wouldSend: 1, sent: 0, failed: 0 });
    expect(l.requests).toHaveLength(0);
    const report = JSON.parse(await readFile(path.join(dir, 'reports/dry.json'), 'utf8'));
    expect(report.rows.find((r: { outcome: string }) => r.outcome === 'invalid').error).toMatch(/caption/);
    expect(report.rows.find((r: { outcome: string }) => r.outcome === 'wouldSend').chatId).toBe('79001112233@c.us');
  });

  it('a wrong token stops files.broadcast at the first send, saying what to fix', async () => {
    const dir = await tempDir();
    await writeData(dir, 'data/recipients.csv', RECIPIENTS);
    const clock = virtualClock();
    const l = await local({ dir, clock });
    const err = await runAction(
      filesBroadcast,
      createActionTestContext({ client: l.clientWith('wrong-token-0000'), clock, baseDir: dir }),
      input(),
    ).catch((e) => e);
    expect(err.code).toBe('JOB_STOPPED');
    expect(err.message).toMatch(/check apiTokenInstance/);
    expect(sends(l)).toBe(1);
    // the stopped job still reports: nobody sent, the refused one failed (sent again by a later run)
    const csv = await readFile(path.join(dir, 'reports/broadcast.csv'), 'utf8');
    expect(csv.match(/,failed,/g)).toHaveLength(1);
    expect(csv).not.toMatch(/,sent,/);
    expect(csv.match(/,notSent,.*not attempted: the job stopped/g)).toHaveLength(2);
  });
});
