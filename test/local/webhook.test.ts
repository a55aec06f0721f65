/**
 * Webhook push: every notification is POSTed with the Bearer token, in
 * order, tried again every 60 s until the receiver answers 200; a receiver that
 * is killed and started again, and a service restart in between, lose none.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { ALICE, conformanceConfig, startLocal, type LocalUnderTest } from '../support/local-service.js';
import type { ManualClock } from '../../src/util/clock.js';
import { LocalSchema } from '../../src/local/config.js';
import { waitFor } from '../support/wait.js';

interface Receiver {
  url: string;
  port: number;
  got: { auth: string | undefined; text: string }[];
  /** Answers this status to the next pushes (then 200). */
  failNext: number[];
  close(): Promise<void>;
}

async function startReceiver(port = 0, got: Receiver['got'] = []): Promise<Receiver> {
  const failNext: number[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const status = failNext.shift() ?? 200;
      if (status === 200) {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { messageData: { textMessageData: { textMessage: string } } };
        got.push({ auth: req.headers.authorization, text: body.messageData.textMessageData.textMessage });
      }
      res.writeHead(status).end();
    });
  });
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
  const p = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${p}/hook`,
    port: p,
    got,
    failNext,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

let h: LocalUnderTest<ManualClock>;
beforeEach(async () => {
  h = await startLocal({
    kind: 'http',
    config: conformanceConfig((raw) => {
      (raw.instances as Record<string, unknown>[])[0]!.settings = { incomingWebhook: 'yes' };
    }),
  });
});
afterEach(() => h.close());

async function incoming(text: string) {
  expect((await h.admin('incoming', { chatId: ALICE, typeMessage: 'textMessage', textMessage: text })).status).toBe(200);
}

/** Moves the service clock in backoff-sized steps until `done` (the pusher sleeps on it between tries). */
async function until(done: () => boolean) {
  // Bounded by wall time, not by a count of steps: on a loaded machine a push's
  // HTTP round trip may span many steps of the virtual clock.
  const end = Date.now() + 60_000;
  while (!done() && Date.now() < end) {
    await new Promise((r) => setTimeout(r, 10));
    await h.clock.advance(1000);
  }
  expect(done()).toBe(true);
}

it('pushes in order with the Bearer token; a killed and restarted receiver and a service restart lose nothing', async () => {
  let receiver = await startReceiver();
  const got = receiver.got;
  expect((await h.call('setSettings', { webhookUrl: receiver.url, webhookUrlToken: 'hook-secret' })).body).toEqual({ saveSettings: true });
  await incoming('m1');
  await incoming('m2');
  await until(() => got.length === 2);
  expect(got.every((g) => g.auth === 'Bearer hook-secret')).toBe(true);
  // The receiver has m2 once its handler ran; the service deletes it from the queue once the
  // answer reached it. Killed in between, the receiver would get m2 again (at-least-once, as the
  // service documents): wait for the queue to be empty before killing it.
  await waitFor('the service to take m1 and m2 off its queue', async () => {
    const count = (await h.call('getWebhooksCount')).body as { count: number };
    return count.count === 0;
  });

  const port = receiver.port;
  await receiver.close();
  await incoming('m3');
  await incoming('m4');
  // Refused pushes are retried with backoff; the service restarts while the receiver is still down.
  for (let i = 0; i < 5; i++) await h.clock.advance(10_000);
  await h.restart();
  await incoming('m5');
  receiver = await startReceiver(port, got);
  receiver.failNext.push(500, 503);
  await until(() => got.length === 5);
  expect(got.map((g) => g.text)).toEqual(['m1', 'm2', 'm3', 'm4', 'm5']);
  await receiver.close();
}, 90_000);

it('while a webhookUrl is set, receiveNotification answers null; emptying it brings the queue back', async () => {
  const receiver = await startReceiver();
  receiver.failNext.push(500, 500, 500, 500, 500, 500, 500, 500);
  await h.call('setSettings', { webhookUrl: receiver.url });
  await incoming('waiting');
  const asleepUntil = h.clock.now() + 5000;
  const r = h.call('receiveNotification', undefined, { query: { receiveTimeout: '5' } });
  // Over HTTP the request may still be on its way: advance only once the service sleeps on it.
  await waitFor('receiveNotification to wait on the service clock', () => h.clock.wakeTimes().includes(asleepUntil));
  await h.clock.advance(5000);
  expect((await r).body).toBeNull();
  await h.call('setSettings', { webhookUrl: '' });
  const n = await h.call('receiveNotification', undefined, { query: { receiveTimeout: '5' } });
  expect(n.body).toMatchObject({ body: { typeWebhook: 'incomingMessageReceived' } });
  await receiver.close();
});

it('as the service documents: a push not answered 200 (a 204 too) is tried again 60 s later, on the service clock', async () => {
  const receiver = await startReceiver();
  receiver.failNext.push(204, 503);
  await h.call('setSettings', { webhookUrl: receiver.url });
  const start = h.clock.now();
  await incoming('late');
  // The first try fails: the pusher sleeps until 60 s later, not a backoff of 1 s.
  await waitFor('the pusher to wait for its next try', () => h.clock.wakeTimes().includes(start + 60_000));
  await h.clock.advance(59_000);
  expect(receiver.got).toEqual([]);
  await h.clock.advance(1000);
  await waitFor('the second try to fail and wait again', () => h.clock.wakeTimes().includes(start + 120_000));
  expect(receiver.got).toEqual([]);
  await h.clock.advance(60_000);
  await waitFor('the third try to be acknowledged', () => receiver.got.length === 1);
  expect(receiver.got.map((g) => g.text)).toEqual(['late']);
  await receiver.close();
});

it('local.webhook defaults to the documented 180 s answer wait and 60 s retry interval, and can be set', () => {
  expect(LocalSchema.parse({}).webhook).toEqual({ timeoutMs: 180_000, retryIntervalMs: 60_000 });
  expect(LocalSchema.parse({ webhook: { retryIntervalMs: 5000 } }).webhook).toEqual({ timeoutMs: 180_000, retryIntervalMs: 5000 });
});
