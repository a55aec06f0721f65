/** The typed client reaches the local service the same over HTTP and in-process; the in-process transport behaves like a socket. */
import { describe, expect, it } from 'vitest';
import { NetworkError } from '../../src/api/errors.js';
import { createClient } from '../../src/client/client.js';
import { createInProcessTransport } from '../../src/runtime/in-process-transport.js';
import { A, ALICE, startLocal } from '../support/local-service.js';
import { conformanceSeed } from './helpers/seed.js';

describe('the typed client over both transports', () => {
  for (const kind of ['http', 'in-process'] as const) {
    it(`createClient works over ${kind}`, async () => {
      const h = await startLocal({ kind, seed: conformanceSeed() });
      try {
        const client = createClient({ ...A, transport: h.transportFor(A), rateLimit: false, retries: 0 });
        const history = await client.getChatHistory({ chatId: ALICE });
        expect(history).toHaveLength(1);
        expect(await client.checkAccount({ username: '@alice' })).toMatchObject({ exist: true, phoneNumber: 79001112233 });
        await expect(client.addContact({ chatId: '79009990000@c.us', firstName: 'X' })).rejects.toMatchObject({ status: 404 });
        await client.close();
      } finally {
        await h.close();
      }
    });
  }

  it('the in-process transport honours abort signals and timeouts like a socket', async () => {
    const never = { handle: () => new Promise<never>(() => {}) };
    const t = createInProcessTransport(never, A.idInstance, A.apiTokenInstance);
    const timedOut = t.request({ method: 'getMessage', httpMethod: 'POST', body: {}, timeoutMs: 20 });
    await expect(timedOut).rejects.toBeInstanceOf(NetworkError);
    await expect(timedOut).rejects.toMatchObject({ code: 'TIMEOUT', mayHaveReachedServer: true });
    const ac = new AbortController();
    ac.abort();
    await expect(
      t.request({ method: 'getMessage', httpMethod: 'POST', body: {}, timeoutMs: 1000, signal: ac.signal }),
    ).rejects.toMatchObject({ mayHaveReachedServer: false });
    expect(t.description).not.toContain(A.idInstance);
  });

  it('the in-process transport aborts every call in flight under a signal when it aborts, and only those', async () => {
    let answer!: () => void;
    const answered = new Promise<void>((r) => (answer = r));
    const service = {
      handle: async (req: { path: string }) => {
        if (req.path.includes('getStateInstance')) await answered;
        else await new Promise<never>(() => {});
        return { status: 200, headers: {}, body: { stateInstance: 'authorized' } };
      },
    };
    const t = createInProcessTransport(service as never, A.idInstance, A.apiTokenInstance);
    const ac = new AbortController();
    const other = new AbortController();
    const call = (method: 'getMessage' | 'getStateInstance', signal: AbortSignal) =>
      t.request({ method, httpMethod: 'POST', body: {}, timeoutMs: 60_000, signal });
    const done = call('getStateInstance', ac.signal);
    answer();
    await expect(done).resolves.toMatchObject({ statusCode: 200 });
    const inFlight = [call('getMessage', ac.signal), call('getMessage', ac.signal)];
    const elsewhere = call('getMessage', other.signal);
    let elsewhereSettled = false;
    elsewhere.then(
      () => (elsewhereSettled = true),
      () => (elsewhereSettled = true),
    );
    ac.abort();
    for (const c of inFlight)
      await expect(c).rejects.toMatchObject({ message: expect.stringMatching(/aborted/), mayHaveReachedServer: true });
    await new Promise((r) => setImmediate(r));
    expect(elsewhereSettled).toBe(false);
    other.abort();
    await expect(elsewhere).rejects.toBeInstanceOf(NetworkError);
  });
});
