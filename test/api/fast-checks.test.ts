import { describe, expect, it } from 'vitest';
import { fastCheck } from '../../src/api/fast-checks.js';
import { REQUEST_SCHEMAS, STRICT_REQUEST_SCHEMAS } from '../../src/api/schemas.js';

const chat = '79001112233@c.us';
const id = 'D760DD0083026B0DECB352F6F95CE4FB';

/** Bodies of the hot methods: plainly valid ones, and every kind the schema must answer itself. */
const BODIES = {
  getMessage: [
    { chatId: chat, idMessage: id },
    { idMessage: id, chatId: '120363043968066561@g.us' },
    { chatId: '-100123', idMessage: id },
    { chatId: chat, idMessage: id, extra: 1 },
    { chatId: chat, idMessage: id, extra: undefined },
    { chatId: chat, idMessage: 'short' },
    { chatId: chat, idMessage: '' },
    { chatId: chat, idMessage: `${id}\u0000` },
    { chatId: chat, idMessage: 1234567890123456 },
    { chatId: 'not-a-chat', idMessage: id },
    { chatId: '', idMessage: id },
    { chatId: chat },
    { idMessage: id },
    {},
  ],
  sendMessage: [
    { chatId: chat, message: 'Hello' },
    { message: 'Hello', chatId: '120363043968066561@g.us' },
    { chatId: chat, message: 'x'.repeat(20000) },
    { chatId: chat, message: 'x'.repeat(20001) },
    { chatId: chat, message: '' },
    { chatId: chat, message: 'a\u0000b' },
    { chatId: chat, message: 5 },
    { chatId: 'not-a-chat', message: 'Hello' },
    { chatId: chat, message: 'Hello', linkPreview: false },
    { chatId: chat, message: 'Hello', quotedMessageId: id },
    { chatId: chat, message: 'Hello', extra: 1 },
    { chatId: chat, message: 'Hello', typingTime: undefined },
    { chatId: chat },
    { message: 'Hello' },
  ],
  checkAccount: [
    { phoneNumber: 79001112233 },
    { phoneNumber: 79001112233, force: true },
    { phoneNumber: 79001112233, force: false },
    { force: true, phoneNumber: 79001112233 },
    { phoneNumber: '79001112233' },
    { phoneNumber: 79001112233, force: 'yes' },
    { phoneNumber: 79001112233, force: undefined },
    { phoneNumber: 79001112233, extra: 1 },
    { phoneNumber: 7900111223.5 },
    { phoneNumber: -79001112233 },
    { phoneNumber: 0 },
    { phoneNumber: 1234567890123456 },
    { phoneNumber: 999999999999999 },
    { phoneNumber: Number.NaN },
    { phoneNumber: 79001112233, username: '@alice' },
    { username: '@alice' },
  ],
} as const;

describe('fast checks of the hottest request bodies', () => {
  for (const [method, bodies] of Object.entries(BODIES) as [keyof typeof BODIES, readonly object[]][]) {
    it.each(bodies.map((b) => [b]))(`${method}: a body it takes is what the schema gives, in the same key order (%o)`, (body) => {
      const fast = fastCheck(method, body);
      if (fast === undefined) return;
      for (const schemas of [REQUEST_SCHEMAS, STRICT_REQUEST_SCHEMAS]) {
        const zod = schemas[method].safeParse(body);
        expect(zod.success).toBe(true);
        expect(Object.entries(fast)).toEqual(Object.entries(zod.data as object));
      }
    });
  }

  it('takes the bodies clients send: getMessage with chatId and idMessage, checkAccount with a phone number', () => {
    expect(fastCheck('getMessage', { chatId: chat, idMessage: id })).toEqual({ chatId: chat, idMessage: id });
    expect(fastCheck('checkAccount', { phoneNumber: 79001112233 })).toEqual({ phoneNumber: 79001112233, force: false });
    expect(fastCheck('sendMessage', { chatId: chat, message: 'Hello' })).toEqual({ chatId: chat, message: 'Hello' });
  });

  it('leaves to the schema every body it is not sure of: other types, unknown keys, strings of digits, other methods', () => {
    for (const body of [null, [], 'x', 5, { chatId: chat, idMessage: id, extra: 1 }]) expect(fastCheck('getMessage', body)).toBeUndefined();
    expect(fastCheck('checkAccount', { phoneNumber: '79001112233' })).toBeUndefined();
    expect(fastCheck('checkAccount', { username: '@alice' })).toBeUndefined();
    expect(fastCheck('getChatHistory', { chatId: chat })).toBeUndefined();
    expect(fastCheck('sendMessage', { chatId: chat, message: 'Hello', linkPreview: false })).toBeUndefined();
  });
});
