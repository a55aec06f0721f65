/**
 * client.notifications(): receive, yield, delete only after the loop body
 * completed; never on break or throw; an abort ends it at once. Against the
 * local service over HTTP.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createClient, type MsgflowClient } from '../../src/client/client.js';
import { createInProcessTransport } from '../../src/runtime/in-process-transport.js';
import { A, ALICE, conformanceConfig, startLocal, type LocalUnderTest } from '../support/local-service.js';
import type { ManualClock } from '../../src/util/clock.js';

let h: LocalUnderTest<ManualClock>;
let client: MsgflowClient;

beforeEach(async () => {
  h = await startLocal({
    kind: 'http',
    config: conformanceConfig((raw) => {
      (raw.instances as Record<string, unknown>[])[0]!.settings = { incomingWebhook: 'yes' };
    }),
  });
  client = createClient({ apiUrl: h.url, ...A, rateLimit: false });
});
afterEach(async () => {
  await client.close();
  await h.close();
});

async function incoming(text: string) {
  const r = await h.admin('incoming', { chatId: ALICE, typeMessage: 'textMessage', textMessage: text });
  expect(r.status).toBe(200);
}

const textOf = (n: { body: unknown }) =>
  (n.body as { messageData: { textMessageData: { textMessage: string } } }).messageData.textMessageData.textMessage;

describe('client.notifications()', () => {
  it('yields in order and deletes each one only once the loop body for it completed', async () => {
    await incoming('one');
    await incoming('two');
    const seen: string[] = [];
    const ac = new AbortController();
    for await (const n of client.notifications({ signal: ac.signal })) {
      seen.push(textOf(n));
      // Inside the body the notification is still queued: receiveNotification shows it again.
      expect((await client.receiveNotification())?.receiptId).toBe(n.receiptId);
      if (seen.length === 2) ac.abort();
    }
    expect(seen).toEqual(['one', 'two']);
    // The second body completed but no next() came after it... except the one that saw the abort: it was deleted too.
    expect(await client.receiveNotification({ receiveTimeout: 5 }, { signal: AbortSignal.timeout(200) }).catch(() => 'waiting')).toBe(
      'waiting',
    );
  });

  it('break and throw leave the notification in the queue (at-least-once)', async () => {
    await incoming('keep');
    for await (const n of client.notifications()) {
      expect(textOf(n)).toBe('keep');
      break;
    }
    await expect(
      (async () => {
        for await (const n of client.notifications()) {
          expect(textOf(n)).toBe('keep');
          throw new Error('handler failed');
        }
      })(),
    ).rejects.toThrow('handler failed');
    const again = await client.receiveNotification();
    expect(again && textOf(again)).toBe('keep');
  });

  it('aborting the signal ends the iteration while a long poll is in flight', async () => {
    const ac = new AbortController();
    const done = (async () => {
      const got = [];
      for await (const n of client.notifications({ signal: ac.signal, receiveTimeout: 60 })) got.push(n);
      return got;
    })();
    await new Promise((r) => setTimeout(r, 50));
    ac.abort();
    await expect(done).resolves.toEqual([]);
  });

  it('in-process too: aborting ends the iteration while a long poll is in flight', async () => {
    const local = createClient({
      ...A,
      transport: createInProcessTransport(h.service, A.idInstance, A.apiTokenInstance),
      rateLimit: false,
    });
    await incoming('here');
    const ac = new AbortController();
    const got: string[] = [];
    const done = (async () => {
      for await (const n of local.notifications({ signal: ac.signal, receiveTimeout: 60 })) got.push(textOf(n));
    })();
    // The first is yielded, then deleted on the next request, which then waits for another.
    while (got.length === 0) await new Promise((r) => setTimeout(r, 10));
    await new Promise((r) => setTimeout(r, 50));
    ac.abort();
    await done;
    expect(got).toEqual(['here']);
    expect(await client.receiveNotification({ receiveTimeout: 5 }, { signal: AbortSignal.timeout(200) }).catch(() => 'waiting')).toBe(
      'waiting',
    );
    await local.close();
  });

  it('refuses a receiveTimeout outside 5..60 before anything is sent', async () => {
    const it = client.notifications({ receiveTimeout: 61 });
    await expect(it.next()).rejects.toThrow("'receiveTimeout' must be less than or equal to 60");
  });
});
