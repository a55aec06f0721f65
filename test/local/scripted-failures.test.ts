/**
 * Failures a test scripts on the local service (local.instances[].failures,
 * local.network): the account in danger at a time or after N sends, the
 * plan's chat quota, journal lag, a webhook receiver down for a while, a
 * slow file host. Everything on the service's clock.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { classify } from '../../src/api/failure.js';
import type { NotificationBody, ReceivedNotification } from '../../src/api/notifications.js';
import type { Message } from '../../src/api/types.js';
import { LocalSchema } from '../../src/local/config.js';
import { createClient } from '../../src/client/client.js';
import type { ManualClock } from '../../src/util/clock.js';
import { startFileServer } from '../support/file-server.js';
import { makePdf } from '../support/media.js';
import { A, ALICE, BOB, CAROL, localConfig, startLocal, type LocalUnderTest } from '../support/local-service.js';
import { waitFor } from '../support/wait.js';

let h: LocalUnderTest<ManualClock>;
afterEach(() => h?.close());

const ON = { incomingWebhook: 'yes', stateWebhook: 'yes', outgoingWebhook: 'yes' };

async function start(instance: Record<string, unknown>, network: Record<string, unknown> = {}) {
  const base = localConfig({}, { settings: ON, ...instance });
  h = await startLocal({ kind: 'http', config: LocalSchema.parse({ ...base, network: { ...base.network, ...network } }) });
}

async function send(chatId: string, message = 'hi') {
  return h.call('sendMessage', { chatId, message });
}

/** Notifications queued so far, up to a sentinel incoming message. */
async function drain(): Promise<NotificationBody[]> {
  await h.admin('incoming', { chatId: ALICE, typeMessage: 'textMessage', textMessage: 'sentinel' });
  const out: NotificationBody[] = [];
  for (;;) {
    const n = (await h.call('receiveNotification', undefined, { query: { receiveTimeout: '5' } })).body as ReceivedNotification;
    await h.call('deleteNotification', undefined, { pathParams: [String(n.receiptId)] });
    const b = n.body as NotificationBody & { messageData?: { textMessageData?: { textMessage?: string } } };
    if (b.typeWebhook === 'incomingMessageReceived' && b.messageData?.textMessageData?.textMessage === 'sentinel') return out;
    out.push(n.body);
  }
}

describe('scripted instance states', () => {
  it('turns yellowCard after 2 sends (the third waits) and blocked at a time, with stateInstanceChanged each time', async () => {
    await start({
      failures: {
        states: [
          { state: 'yellowCard', afterSends: 2 },
          { state: 'blocked', afterMs: 3_600_000 },
        ],
      },
    });
    const ids = [];
    for (const to of [ALICE, BOB, CAROL]) ids.push(((await send(to)).body as { idMessage: string }).idMessage);
    expect(await h.settled(ids[0]!)).toBe('sent');
    await h.clock.advance(500);
    expect(await h.settled(ids[1]!)).toBe('sent');
    await waitFor(
      'the state to change',
      async () => ((await h.call('getStateInstance')).body as { stateInstance: string }).stateInstance === 'yellowCard',
    );
    await h.clock.advance(10_000);
    expect(((await h.call('showMessagesQueue')).body as { messageID: string }[]).map((q) => q.messageID)).toEqual([ids[2]]);
    await h.clock.advance(3_600_000);
    expect((await h.call('getStateInstance')).body).toEqual({ stateInstance: 'blocked' });
    const states = (await drain())
      .filter((b) => b.typeWebhook === 'stateInstanceChanged')
      .map((b) => (b as { stateInstance: string }).stateInstance);
    expect(states).toEqual(['yellowCard', 'blocked']);
  });
});

describe('the chat quota of the plan', () => {
  it('after 2 chats, a send to a new chat answers 466 with the documented body and queues quotaExceeded; known chats still work', async () => {
    await start({ failures: { newChatsQuota: 2 } });
    expect((await send(ALICE)).statusCode).toBe(200);
    expect((await send(BOB)).statusCode).toBe(200);
    const refused = await send(CAROL);
    expect(refused.statusCode).toBe(466);
    expect(refused.body).toMatchObject({
      correspondentsStatus: { method: 'correspondents', used: 2, total: 2, status: 'CORRESPONDENTS_QUOTA_EXCEEDED' },
    });
    expect((refused.body as { correspondentsStatus: { description: string } }).correspondentsStatus.description).toContain(ALICE);
    expect((await send(ALICE, 'again')).statusCode).toBe(200);
    const quota = (await drain()).find((b) => b.typeWebhook === 'quotaExceeded');
    // The documented body: typeWebhook, instanceData, timestamp, quotaData (the 466's correspondentsStatus), nothing else.
    expect(Object.keys(quota ?? {}).sort()).toEqual(['instanceData', 'quotaData', 'timestamp', 'typeWebhook']);
    expect(quota).toMatchObject({ quotaData: { method: 'correspondents', used: 2, total: 2, status: 'CORRESPONDENTS_QUOTA_EXCEEDED' } });
    expect(quota?.typeWebhook === 'quotaExceeded' && quota.quotaData).toEqual(
      (refused.body as { correspondentsStatus: unknown }).correspondentsStatus,
    );
    expect(quota?.typeWebhook === 'quotaExceeded' && quota.quotaData.description).toMatch(
      /change the tariff to business https:\/\/console\.green-api\.com$/,
    );
    // msgflow's client reads it as QUOTA_EXCEEDED: fatal for a run.
    const client = createClient({ apiUrl: h.url, ...A, rateLimit: false });
    const err = await client.sendMessage({ chatId: '79006660001@c.us', message: 'x' }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'QUOTA_EXCEEDED', status: 466 });
    expect(classify(err)).toBe('fatal');
    await client.close();
  });
});

describe('the network', () => {
  it('journal lag: a sent message shows in the journals only journalLagMs after it was sent', async () => {
    await start({}, { journalLagMs: 120_000 });
    const id = ((await send(ALICE)).body as { idMessage: string }).idMessage;
    expect(await h.settled(id)).toBe('sent');
    const listed = async () => ((await h.call('lastOutgoingMessages')).body as Message[]).map((m) => m.idMessage);
    expect(await listed()).toEqual([]);
    expect((await h.call('getMessage', { chatId: ALICE, idMessage: id })).statusCode).toBe(400);
    await h.clock.advance(119_000);
    expect(await listed()).toEqual([]);
    await h.clock.advance(1000);
    expect(await listed()).toEqual([id]);
    expect(((await h.call('getChatHistory', { chatId: ALICE })).body as Message[]).map((m) => m.idMessage)).toEqual([id]);
  });

  it('a number without an account: the message is noAccount, and its status arrives although outgoingWebhook is off', async () => {
    await start({ settings: { incomingWebhook: 'yes' } });
    const id = ((await send('79009990000@c.us')).body as { idMessage: string }).idMessage;
    expect(await h.settled(id)).toBe('sent');
    expect((await drain()).find((b) => b.typeWebhook === 'outgoingMessageStatus')).toMatchObject({ idMessage: id, status: 'noAccount' });
  });

  it('a slow file host: the file is fetched fileHostDelayMs after the message leaves the queue', async () => {
    const files = await startFileServer({ '/doc.pdf': { body: makePdf(), contentType: 'application/pdf' } });
    try {
      await start({}, { fileHostDelayMs: 30_000 });
      const r = await h.call('sendFileByUrl', { chatId: ALICE, urlFile: files.url('/doc.pdf'), fileName: 'doc.pdf' });
      const id = (r.body as { idMessage: string }).idMessage;
      await waitFor('the fetch to wait on the service clock', () => h.clock.wakeTimes().some((t) => t >= h.clock.now() + 29_000));
      expect(files.hits).toEqual([]);
      await h.clock.advance(30_000);
      expect(await h.settled(id)).toBe('sent');
      expect(files.hits).toEqual(['/doc.pdf']);
    } finally {
      await files.close();
    }
  });

  it('a webhook receiver down for a while: nothing is pushed during the outage, everything after it, in order', async () => {
    const got: string[] = [];
    const server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        got.push((JSON.parse(Buffer.concat(chunks).toString()) as { typeWebhook: string }).typeWebhook);
        res.writeHead(200).end();
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
      await start({ settings: { ...ON, webhookUrl: url }, failures: { webhookDown: [{ afterMs: 0, forMs: 300_000 }] } });
      await h.admin('incoming', { chatId: ALICE, typeMessage: 'textMessage', textMessage: 'while down' });
      await h.clock.advance(240_000);
      expect(got).toEqual([]);
      await h.clock.advance(60_000);
      await waitFor('the push after the outage', () => got.length === 1);
      expect(got).toEqual(['incomingMessageReceived']);
    } finally {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    }
  });
});
