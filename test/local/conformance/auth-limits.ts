import { describe, expect, it } from 'vitest';
import { A, ALICE, B, conformanceConfig, useLocal, type TransportKind } from '../../support/local-service.js';

export function authAndLimitsSuite(kind: TransportKind) {
  describe('auth, routing and rate limits', () => {
    const h = useLocal(kind, () => ({ config: conformanceConfig() }));

    it('wrong token: 401; unknown instance: 403; JSON bodies that never echo the token or id', async () => {
      const wrong = await h.call(
        'getChatHistory',
        { chatId: ALICE },
        { who: { idInstance: A.idInstance, apiTokenInstance: 'not-the-token-xyz' } },
      );
      expect(wrong.statusCode).toBe(401);
      expect(wrong.body).toEqual({ message: 'wrong apiTokenInstance for this instance' });
      const unknown = await h.call(
        'getChatHistory',
        { chatId: ALICE },
        { who: { idInstance: '999999', apiTokenInstance: A.apiTokenInstance } },
      );
      expect(unknown.statusCode).toBe(403);
      expect(unknown.body).toEqual({ message: 'unknown instance' });
      for (const r of [wrong, unknown]) {
        const text = JSON.stringify(r.body);
        expect(text).not.toContain('not-the-token-xyz');
        expect(text).not.toContain(A.apiTokenInstance);
        expect(text).not.toContain('999999');
      }
      // The other instance's token does not open this one.
      const crossed = await h.call(
        'getChatHistory',
        { chatId: ALICE },
        { who: { idInstance: A.idInstance, apiTokenInstance: B.apiTokenInstance } },
      );
      expect(crossed.statusCode).toBe(401);
    });

    it('the token check holds however many distinct wrong tokens came first, and a wrong one stays wrong once seen', async () => {
      // More distinct tokens than the check keeps digests of (TOKEN_CACHE_SIZE, 64): old entries are evicted, answers do not change.
      const who = (apiTokenInstance: string) => ({ who: { idInstance: A.idInstance, apiTokenInstance } });
      for (let i = 0; i < 100; i++) expect((await h.call('getStateInstance', undefined, who(`guess-${i}`))).statusCode).toBe(401);
      expect((await h.call('getStateInstance', undefined, who(A.apiTokenInstance))).statusCode).toBe(200);
      // Seen (and cached) before, still refused; the right one, cached now, still accepted; a prefix of it is not it.
      expect((await h.call('getStateInstance', undefined, who('guess-99'))).statusCode).toBe(401);
      expect((await h.call('getStateInstance', undefined, who(A.apiTokenInstance))).statusCode).toBe(200);
      expect((await h.call('getStateInstance', undefined, who(A.apiTokenInstance.slice(0, -1)))).statusCode).toBe(401);
      expect((await h.call('getStateInstance', undefined, who(`${A.apiTokenInstance}x`))).statusCode).toBe(401);
    });

    it('wrong HTTP method: 405 with Allow', async () => {
      const r = await h.call('getChatHistory', undefined, { httpMethod: 'GET' });
      expect(r.statusCode).toBe(405);
      expect(r.headers.allow).toBe('POST');
      expect((r.body as { message: string }).message).toBe('getChatHistory expects POST, got GET');
    });

    it('per instance and method, per second: 429 with Retry-After, then allowed again', async () => {
      // Instance B: getChatHistory 1/s; getMessage keeps the published 10/s.
      const first = await h.call('getChatHistory', { chatId: ALICE }, { who: B });
      expect(first.statusCode).toBe(200);
      const second = await h.call('getChatHistory', { chatId: ALICE }, { who: B });
      expect(second.statusCode).toBe(429);
      expect(second.headers['retry-after']).toBe('1');
      expect((second.body as { message: string }).message).toMatch(/getChatHistory: more than 1 requests per second/);
      // Other methods and other instances have their own budgets.
      expect((await h.call('checkAccount', { phoneNumber: 79001112233 }, { who: B })).statusCode).toBe(200);
      expect((await h.call('getChatHistory', { chatId: ALICE })).statusCode).toBe(200);
      const statuses: number[] = [];
      for (let i = 0; i < 11; i++)
        statuses.push((await h.call('getMessage', { chatId: ALICE, idMessage: 'X'.repeat(16) }, { who: B })).statusCode);
      expect(statuses.filter((s) => s === 429)).toHaveLength(1);
      await h.clock.advance(1000);
      expect((await h.call('getChatHistory', { chatId: ALICE }, { who: B })).statusCode).toBe(200);
    });
  });
}
