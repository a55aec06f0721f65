import { describe, expect, it } from 'vitest';
import { conformanceConfig, HIDDEN, useLocal, type TransportKind } from '../../support/local-service.js';

export function checkAccountSuite(kind: TransportKind) {
  describe('checkAccount', () => {
    const h = useLocal(kind, () => ({ config: conformanceConfig() }));

    it('an account: {exist, chatId, username, phoneNumber, fromCache}; cached unless force', async () => {
      const first = await h.call('checkAccount', { phoneNumber: 79001112233 });
      expect(first.statusCode).toBe(200);
      expect(first.body).toEqual({
        exist: true,
        chatId: '79001112233@c.us',
        username: '@alice',
        phoneNumber: 79001112233,
        fromCache: false,
      });
      const second = await h.call('checkAccount', { phoneNumber: 79001112233 });
      expect(second.body).toMatchObject({ exist: true, fromCache: true });
      const forced = await h.call('checkAccount', { phoneNumber: 79001112233, force: true });
      expect(forced.body).toMatchObject({ exist: true, fromCache: false });
      const byName = await h.call('checkAccount', { username: '@bob' });
      expect(byName.body).toEqual({
        exist: true,
        chatId: '79002223344@c.us',
        username: '@bob',
        phoneNumber: 79002223344,
        fromCache: false,
      });
    });

    it('no account, or a hidden number: {exist:false, chatId:""} and nothing else', async () => {
      for (const body of [{ phoneNumber: 79009990000 }, { phoneNumber: HIDDEN }, { username: '@ghost' }, { username: '@nobody' }]) {
        await h.clock.advance(10 * 60_000); // a new window each: this test is not about the limit
        const r = await h.call('checkAccount', body);
        expect(r.statusCode).toBe(200);
        expect(r.body).toStrictEqual({ exist: false, chatId: '' });
      }
    });

    it('both or neither of phoneNumber/username: {status:false, reason} naming the rule', async () => {
      for (const body of [{ phoneNumber: 79001112233, username: '@alice' }, {}, { force: true }]) {
        const r = await h.call('checkAccount', body);
        expect(r.body).toStrictEqual({ status: false, reason: expect.stringMatching(/phoneNumber or username/) });
      }
      const digits = await h.call('checkAccount', { phoneNumber: '7900abc' });
      expect(digits.body).toEqual({ message: "Validation failed. Details: Wrong format. 'phoneNumber' must contain only digits" });
    });

    it('checkWhatsapp: a phoneNumber of fewer than 11 or more than 16 digits is refused with 400, as documented', async () => {
      for (const phoneNumber of [7900111223, '7900111223', 10_000_000_000_000_000, '12345678901234567']) {
        const r = await h.call('checkWhatsapp', { phoneNumber });
        expect(r.statusCode, String(phoneNumber)).toBe(400);
        expect(r.body).toEqual({ message: 'Validation failed. Details: bad phone number, valid from 11 to 16 digits' });
      }
      for (const phoneNumber of [79009990000, '1234567890123456']) {
        const r = await h.call('checkWhatsapp', { phoneNumber });
        expect(r.statusCode, String(phoneNumber)).toBe(200);
        expect(r.body).toEqual({ existsWhatsapp: false, chatId: '' });
      }
    });

    it('instance starting or notAuthorized: {status:false, reason}', async () => {
      for (const state of ['starting', 'notAuthorized']) {
        expect((await h.admin('state', { state })).body).toEqual({ state });
        const r = await h.call('checkAccount', { phoneNumber: 79001112233 });
        expect(r.body).toStrictEqual({ status: false, reason: expect.stringContaining(state) });
      }
      await h.admin('state', { state: 'authorized' });
      expect((await h.call('checkAccount', { phoneNumber: 79001112233 })).body).toMatchObject({ exist: true });
      expect((await h.admin('state', { state: 'asleep' })).status).toBe(400);
    });

    it('more distinct numbers than the limit in its window: HTTP 200 rate_limit_exceeded with retryAfter until the pause ends', async () => {
      // Limit: 3 distinct numbers per 10 minutes, pause 7200 s.
      for (const n of [79001112233, 79002223344, 79003334455]) {
        expect((await h.call('checkAccount', { phoneNumber: n })).body).toMatchObject({ exist: true });
      }
      // Re-checking a number of the window (cached or forced) is not a new number.
      expect((await h.call('checkAccount', { phoneNumber: 79001112233, force: true })).body).toMatchObject({ exist: true });
      const over = await h.call('checkAccount', { phoneNumber: 79009990000 });
      expect(over.statusCode).toBe(200);
      expect(over.body).toStrictEqual({ status: false, data: { status: 'fail', reason: 'rate_limit_exceeded', retryAfter: 7200 } });
      await h.clock.advance(3600_000);
      const still = await h.call('checkAccount', { phoneNumber: 79001112233 });
      expect(still.body).toStrictEqual({ status: false, data: { status: 'fail', reason: 'rate_limit_exceeded', retryAfter: 3600 } });
      await h.restart(); // the pause is persisted
      expect((await h.call('checkAccount', { phoneNumber: 79002223344 })).body).toMatchObject({ data: { retryAfter: 3600 } });
      await h.clock.advance(3600_000);
      expect((await h.call('checkAccount', { phoneNumber: 79009990000 })).body).toStrictEqual({ exist: false, chatId: '' });
    });

    it('a new window starts after windowMinutes', async () => {
      for (const n of [79001112233, 79002223344, 79003334455]) await h.call('checkAccount', { phoneNumber: n });
      await h.clock.advance(10 * 60_000);
      expect((await h.call('checkAccount', { phoneNumber: 79009990000 })).body).toStrictEqual({ exist: false, chatId: '' });
    });
  });
}
