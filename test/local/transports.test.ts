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
});
