import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ApiError, NetworkError, RateLimitError } from '../../src/api/errors.js';
import { createClient, type MsgflowClient } from '../../src/client/client.js';
import type { ClientOptions } from '../../src/client/options.js';
import { ManualClock } from '../../src/util/clock.js';
import { classify } from '../../src/api/failure.js';
import { ID, PERSONAL, TOKEN, VALID, fail } from './helpers/fixtures.js';
import { RecordingClock } from './helpers/recording-clock.js';
import { freePort, startScriptServer, type ScriptServer } from './helpers/script-server.js';
import { waitFor } from '../support/wait.js';

let server: ScriptServer;
let clock: RecordingClock;
const clients: MsgflowClient[] = [];
const servers: ScriptServer[] = [];

function make(over: Partial<ClientOptions> = {}): MsgflowClient {
  const c = createClient({ apiUrl: server.url, idInstance: ID, apiTokenInstance: TOKEN, clock, rateLimit: false, ...over });
  clients.push(c);
  return c;
}

beforeEach(async () => {
  server = await startScriptServer();
  servers.push(server);
  clock = new RecordingClock();
});
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

const sendFile = (c: MsgflowClient) => c.sendFileByUrl(VALID.sendFileByUrl.request as never);
const addContact = (c: MsgflowClient) => c.addContact({ chatId: PERSONAL, firstName: 'Ann' });

describe('idempotent methods are retried', () => {
  it('after 5xx', async () => {
    server.script({ status: 502, raw: 'Bad Gateway' }, { status: 503, json: {} }, { json: [] });
    await expect(make().getChatHistory({ chatId: PERSONAL })).resolves.toEqual([]);
    expect(server.requests).toHaveLength(3);
  });

  it('after a reset connection', async () => {
    server.script({ reset: true }, { json: { editContact: true } });
    await expect(make().editContact({ chatId: PERSONAL, firstName: 'Ann' })).resolves.toEqual({ editContact: true });
    expect(server.requests).toHaveLength(2);
  });

  it('after a timeout (per-call timeoutMs)', async () => {
    server.script({ hang: true }, { json: { deleteContact: true } });
    const c = make();
    // Limits of 1 s here: a shorter one may end an attempt before its request reached the loaded machine's server.
    await expect(c.deleteContact({ chatId: PERSONAL }, { timeoutMs: 1000 })).resolves.toEqual({ deleteContact: true });
    expect(server.requests).toHaveLength(2);
  });

  it('a timeout on every attempt ends in NetworkError code TIMEOUT', async () => {
    server.fallback = { hang: true };
    const err = await fail(make({ timeoutMs: 1000, retries: 1 }).getMessage(VALID.getMessage.request as never));
    expect(err).toBeInstanceOf(NetworkError);
    expect(err).toMatchObject({ code: 'TIMEOUT', name: 'TimeoutError', mayHaveReachedServer: true });
    expect(err.message).toBe('getMessage: no answer within 1000 ms');
    expect(server.requests).toHaveLength(2);
  });

  it('retries: 0 makes a single attempt', async () => {
    server.fallback = { status: 500, json: { message: 'boom' } };
    await expect(make({ retries: 0 }).getChatHistory({ chatId: PERSONAL })).rejects.toBeInstanceOf(ApiError);
    expect(server.requests).toHaveLength(1);
    expect(clock.sleeps).toEqual([]);
  });
});

describe('non-idempotent methods (sendFileByUrl, addContact)', () => {
  it.each([
    ['sendFileByUrl', sendFile],
    ['addContact', addContact],
  ] as const)('%s is not retried after a 500', async (_m, run) => {
    server.fallback = { status: 500, json: { message: 'boom' } };
    const err = await fail(run(make()));
    expect(err).toBeInstanceOf(ApiError);
    expect(err.status).toBe(500);
    expect(server.requests).toHaveLength(1);
  });

  it.each([
    ['sendFileByUrl', sendFile],
    ['addContact', addContact],
  ] as const)('%s is not retried after the server read the body and reset the connection', async (_m, run) => {
    server.fallback = { reset: true };
    const err = await fail(run(make()));
    expect(err).toBeInstanceOf(NetworkError);
    expect((err as NetworkError).mayHaveReachedServer).toBe(true);
    expect(server.requests).toHaveLength(1);
    expect(server.requests[0]!.body).toMatchObject({ chatId: PERSONAL });
  });

  it('sendFileByUrl is not retried after a timeout', async () => {
    server.fallback = { hang: true };
    // 1 s, not less: on a loaded machine a shorter limit may end the call before its request
    // reached the server, and the test would see no request instead of one.
    const err = await fail(sendFile(make({ timeoutMs: 1000 })));
    expect(err.code).toBe('TIMEOUT');
    expect(server.requests).toHaveLength(1);
  });

  it.each([
    ['sendFileByUrl', sendFile, { idMessage: 'BAE5F4886F6F2D07' }],
    ['addContact', addContact, { addContact: true }],
  ] as const)('%s is retried after a 429', async (_m, run, answer) => {
    server.script({ status: 429, json: { message: 'slow down' } }, { json: answer });
    await expect(run(make())).resolves.toEqual(answer);
    expect(server.requests).toHaveLength(2);
  });

  /** A server on `port` that answers one call, then stops listening (closing the connection, so no kept-alive socket is reset later). */
  async function answeredOnceThenGone(c: MsgflowClient, port: number): Promise<void> {
    const first = await startScriptServer(port);
    first.script({ json: [], headers: { connection: 'close' } });
    await c.getChatHistory({ chatId: PERSONAL });
    await first.close();
  }

  it.each([
    ['sendFileByUrl', sendFile, { idMessage: 'BAE5F4886F6F2D07' }],
    ['addContact', addContact, { addContact: true }],
  ] as const)(
    '%s is retried after connection refused once the service has answered (it restarts during the backoff)',
    async (_m, run, answer) => {
      const port = await freePort();
      const c = make({ apiUrl: `http://127.0.0.1:${port}` });
      await answeredOnceThenGone(c, port);
      let later: ScriptServer | undefined;
      clock.onSleep = async () => {
        if (later) return;
        later = await startScriptServer(port);
        servers.push(later);
        later.script({ json: answer });
      };
      await expect(run(c)).resolves.toEqual(answer);
      expect(clock.sleeps).toHaveLength(1);
      expect(later!.requests).toHaveLength(1);
    },
  );

  it('connection refused on every attempt after the service had answered: NetworkError, mayHaveReachedServer false, all retries spent', async () => {
    const port = await freePort();
    const c = make({ apiUrl: `http://127.0.0.1:${port}` });
    await answeredOnceThenGone(c, port);
    const err = await fail(sendFile(c));
    expect(err).toBeInstanceOf(NetworkError);
    expect(err).toMatchObject({ code: 'NETWORK_ERROR', mayHaveReachedServer: false });
    expect(err.message).toMatch(/^sendFileByUrl: network error ECONNREFUSED/);
    expect(clock.sleeps).toHaveLength(3);
  });

  it("connection refused on a client's first call fails at once, naming the instance and its apiUrl, never the id or token", async () => {
    const port = await freePort();
    const apiUrl = `http://127.0.0.1:${port}`;
    const err = await fail(make({ apiUrl, name: 'default' }).getChatHistory({ chatId: PERSONAL }));
    expect(clock.sleeps).toEqual([]);
    expect(err).toMatchObject({ code: 'CONNECTION_REFUSED', mayHaveReachedServer: false });
    expect(err.message).toBe(
      `instance 'default': nothing is listening at apiUrl ${apiUrl} (getChatHistory: connection refused); start the service there or correct the instance's apiUrl`,
    );
    expect(`${err.message} ${JSON.stringify(err.params)}`).not.toMatch(new RegExp(`${ID}|${TOKEN}`));
    expect(classify(err)).toBe('fatal');
    // Without a name (a client built in code), the apiUrl alone.
    const anonymous = await fail(make({ apiUrl }).sendMessage({ chatId: PERSONAL, message: 'hi' }));
    expect(anonymous.message).toMatch(new RegExp(`^nothing is listening at apiUrl ${apiUrl} \\(sendMessage: connection refused\\)`));
  });
});

describe('backoff and Retry-After', () => {
  it('exponential, capped, with equal jitter', async () => {
    server.fallback = { status: 503, json: {} };
    await fail(
      make({ retries: 4, retryBaseDelayMs: 100, retryMaxDelayMs: 250, retryJitter: 'equal' }).getChatHistory({ chatId: PERSONAL }),
    );
    const [a, b, c, d] = clock.sleeps as [number, number, number, number];
    expect(clock.sleeps).toHaveLength(4);
    expect(a).toBeGreaterThanOrEqual(50);
    expect(a).toBeLessThanOrEqual(100);
    expect(b).toBeGreaterThanOrEqual(100);
    expect(b).toBeLessThanOrEqual(200);
    for (const x of [c, d]) {
      expect(x).toBeGreaterThanOrEqual(125);
      expect(x).toBeLessThanOrEqual(250);
    }
  });

  it('full jitter stays within [0, cap]', async () => {
    server.fallback = { status: 500, json: {} };
    await fail(make({ retries: 5, retryBaseDelayMs: 100, retryMaxDelayMs: 300 }).getChatHistory({ chatId: PERSONAL }));
    expect(clock.sleeps).toHaveLength(5);
    for (const s of clock.sleeps) expect(s).toBeLessThanOrEqual(300);
  });

  it('429 Retry-After in seconds is slept (it exceeds the backoff)', async () => {
    server.script({ status: 429, json: {}, headers: { 'retry-after': '3' } }, { json: [] });
    await make().getChatHistory({ chatId: PERSONAL });
    expect(clock.sleeps).toEqual([3000]);
  });

  it('429 Retry-After as an HTTP-date, measured on the client clock', async () => {
    const at = new Date(clock.now() + 5000).toUTCString();
    server.script({ status: 429, json: {}, headers: { 'retry-after': at } }, { json: [] });
    await make().getChatHistory({ chatId: PERSONAL });
    expect(clock.sleeps).toEqual([5000]);
  });

  it('503 Retry-After is honoured too', async () => {
    server.script({ status: 503, json: {}, headers: { 'retry-after': '1' } }, { json: [] });
    await make().getChatHistory({ chatId: PERSONAL });
    expect(clock.sleeps).toEqual([1000]);
  });

  it('the backoff wins when it is longer than Retry-After', async () => {
    server.script({ status: 429, json: {}, headers: { 'retry-after': '0' } }, { json: [] });
    await make({ retryBaseDelayMs: 800, retryJitter: 'equal' }).getChatHistory({ chatId: PERSONAL });
    expect(clock.sleeps[0]).toBeGreaterThanOrEqual(400);
  });

  it('a Retry-After beyond retryMaxDelayMs is not slept: the error says how long to wait', async () => {
    server.script({ status: 429, json: { message: 'later' }, headers: { 'retry-after': '3600' } });
    const err = await fail(make().getChatHistory({ chatId: PERSONAL }));
    expect(err).toBeInstanceOf(RateLimitError);
    expect((err as RateLimitError).retryAfterMs).toBe(3_600_000);
    expect(server.requests).toHaveLength(1);
    expect(clock.sleeps).toEqual([]);
  });

  it('waits on the injected clock: nothing is resent until it advances', async () => {
    const manual = new ManualClock(0);
    server.script({ status: 429, json: {}, headers: { 'retry-after': '10' } }, { json: [] });
    const p = make({ clock: manual }).getChatHistory({ chatId: PERSONAL });
    await waitFor('manual.pending === 1', () => manual.pending === 1);
    await manual.advance(9_999);
    expect(server.requests).toHaveLength(1);
    await manual.advance(1);
    await expect(p).resolves.toEqual([]);
    expect(server.requests).toHaveLength(2);
  });
});

describe('abort and close', () => {
  it('an aborted signal stops the backoff and no further request is sent', async () => {
    const manual = new ManualClock(0);
    server.fallback = { status: 503, json: {} };
    const ac = new AbortController();
    const p = make({ clock: manual }).getChatHistory({ chatId: PERSONAL }, { signal: ac.signal });
    await waitFor('manual.pending === 1', () => manual.pending === 1);
    ac.abort(new Error('stop now'));
    await expect(p).rejects.toThrow('stop now');
    expect(server.requests).toHaveLength(1);
  });

  it('an already aborted signal sends nothing', async () => {
    const ac = new AbortController();
    ac.abort(new Error('too late'));
    await expect(make().getChatHistory({ chatId: PERSONAL }, { signal: ac.signal })).rejects.toThrow('too late');
    expect(server.requests).toHaveLength(0);
  });

  it('aborting a request in flight rejects with the reason', async () => {
    server.fallback = { hang: true };
    const ac = new AbortController();
    const p = make().getChatHistory({ chatId: PERSONAL }, { signal: ac.signal });
    await waitFor('server.requests.length === 1', () => server.requests.length === 1);
    ac.abort(new Error('cancelled'));
    await expect(p).rejects.toThrow('cancelled');
  });

  it('many calls in flight under one signal all end when it aborts, calls under another signal go on, and no listener warning is printed', async () => {
    server.fallback = { hang: true };
    const warnings: Error[] = [];
    const onWarning = (w: Error) => warnings.push(w);
    process.on('warning', onWarning);
    try {
      const c = make();
      const a = new AbortController();
      const b = new AbortController();
      const underA = Array.from({ length: 20 }, () => c.getChatHistory({ chatId: PERSONAL }, { signal: a.signal }));
      const underB = c.getChatHistory({ chatId: PERSONAL }, { signal: b.signal });
      await waitFor('21 requests reached the server', () => server.requests.length === 21);
      a.abort(new Error('stop A'));
      for (const p of underA) await expect(p).rejects.toThrow('stop A');
      // B's call is still waiting: it ends with B's reason, not A's.
      b.abort(new Error('stop B'));
      await expect(underB).rejects.toThrow('stop B');
      server.fallback = { json: [] };
      await expect(c.getChatHistory({ chatId: PERSONAL }, { signal: new AbortController().signal })).resolves.toEqual([]);
      await new Promise((r) => setImmediate(r));
      expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning')).toEqual([]);
    } finally {
      process.off('warning', onWarning);
    }
  });

  it('close() ends pending waits with CLIENT_CLOSED; later calls fail the same way', async () => {
    const manual = new ManualClock(0);
    server.fallback = { status: 503, json: {} };
    const c = make({ clock: manual });
    const p = c.getChatHistory({ chatId: PERSONAL });
    await waitFor('manual.pending === 1', () => manual.pending === 1);
    await c.close();
    const err = await fail(p);
    expect(err).toMatchObject({ code: 'CLIENT_CLOSED', message: 'getChatHistory: the client is closed' });
    expect((await fail(c.deleteContact({ chatId: PERSONAL }))).code).toBe('CLIENT_CLOSED');
    expect(server.requests).toHaveLength(1);
  });
});
