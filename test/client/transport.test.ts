import { describe, expect, it } from 'vitest';
import { NetworkError, RateLimitError } from '../../src/api/errors.js';
import { createClient } from '../../src/client/client.js';
import type { Transport, TransportRequest, TransportResponse } from '../../src/client/transport.js';
import { GROUP, ID, PERSONAL, TOKEN, VALID } from './helpers/fixtures.js';
import { RecordingClock } from './helpers/recording-clock.js';

/** A scripted in-memory transport, as the local service's in-process transport plugs in. */
function memoryTransport(answers: Array<TransportResponse | Error>) {
  const seen: TransportRequest[] = [];
  let closed = 0;
  const transport: Transport = {
    description: 'memory',
    async request(req) {
      seen.push(req);
      const next = answers.shift() ?? { statusCode: 500, headers: {}, body: { message: 'no answer scripted' } };
      if (next instanceof Error) throw next;
      return next;
    },
    async close() {
      closed++;
    },
  };
  return { transport, seen, closed: () => closed };
}

const ok = (body: unknown): TransportResponse => ({ statusCode: 200, headers: {}, body });

describe('the client core over any Transport', () => {
  it('hands the transport the parsed request: method, HTTP method, body or query, timeout, signal', async () => {
    const m = memoryTransport([ok([]), ok([])]);
    const c = createClient({ idInstance: ID, apiTokenInstance: TOKEN, transport: m.transport, rateLimit: false, timeoutMs: 1234 });
    await c.getChatHistory({ chatId: GROUP });
    await c.lastOutgoingMessages(undefined, { timeoutMs: 99 });
    expect(m.seen[0]).toMatchObject({ method: 'getChatHistory', httpMethod: 'POST', body: { chatId: GROUP, count: 100 }, timeoutMs: 1234 });
    expect(m.seen[0]!.query).toBeUndefined();
    expect(m.seen[0]!.signal).toBeInstanceOf(AbortSignal);
    expect(m.seen[1]).toMatchObject({ method: 'lastOutgoingMessages', httpMethod: 'GET', query: { minutes: '1440' }, timeoutMs: 99 });
    expect(m.seen[1]!.body).toBeUndefined();
  });

  it('applies the same retry rules to transport NetworkErrors', async () => {
    const refused = new NetworkError('sendFileByUrl', 'ECONNREFUSED', false);
    const reset = new NetworkError('sendFileByUrl', 'ECONNRESET', true);
    const m = memoryTransport([refused, ok(VALID.sendFileByUrl.answer), reset]);
    const c = createClient({ idInstance: ID, apiTokenInstance: TOKEN, transport: m.transport, clock: new RecordingClock() });
    await expect(c.sendFileByUrl(VALID.sendFileByUrl.request as never)).resolves.toEqual(VALID.sendFileByUrl.answer);
    await expect(c.sendFileByUrl(VALID.sendFileByUrl.request as never)).rejects.toBe(reset);
    expect(m.seen).toHaveLength(3);
  });

  it('maps answers the same way (429 with Retry-After, then success)', async () => {
    const clock = new RecordingClock();
    const m = memoryTransport([
      { statusCode: 429, headers: { 'retry-after': '4' }, body: { message: 'slow' } },
      ok({ deleteContact: true }),
    ]);
    const c = createClient({ idInstance: ID, apiTokenInstance: TOKEN, transport: m.transport, clock, rateLimit: false });
    await expect(c.deleteContact({ chatId: PERSONAL })).resolves.toEqual({ deleteContact: true });
    expect(clock.sleeps).toEqual([4000]);
  });

  it('a RateLimitError keeps the status and method of the answer', async () => {
    const m = memoryTransport([{ statusCode: 429, headers: { 'retry-after': '600' }, body: { message: 'slow' } }]);
    const c = createClient({ idInstance: ID, apiTokenInstance: TOKEN, transport: m.transport });
    const err = await c.getMessage(VALID.getMessage.request as never).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RateLimitError);
    expect(err).toMatchObject({ method: 'getMessage', status: 429, retryAfterMs: 600_000, scope: 'http' });
  });

  it('close() leaves a caller-owned transport open', async () => {
    const m = memoryTransport([]);
    const c = createClient({ idInstance: ID, apiTokenInstance: TOKEN, transport: m.transport });
    await c.close();
    await c.close();
    expect(m.closed()).toBe(0);
  });

  it('rejects a bad per-call timeout before sending', async () => {
    const m = memoryTransport([]);
    const c = createClient({ idInstance: ID, apiTokenInstance: TOKEN, transport: m.transport });
    await expect(c.deleteContact({ chatId: PERSONAL }, { timeoutMs: -5 })).rejects.toMatchObject({
      code: 'CLIENT_OPTIONS_INVALID',
      field: 'timeoutMs',
    });
    expect(m.seen).toHaveLength(0);
  });
});
