import { describe, expect, it } from 'vitest';
import { phoneOfChatId } from '../../src/api/chat-id.js';

describe('phoneOfChatId', () => {
  it.each([
    ['79001112233@c.us', 79001112233],
    ['12345@c.us', 12345],
    ['12345678901234567890@c.us', undefined], // 20 digits: beyond a safe integer
    ['79001112233', 79001112233],
    ['1', 1],
  ])('reads the phone number of a personal chat id or of bare digits: %s -> %s', (chatId, phone) => {
    expect(phoneOfChatId(chatId)).toBe(phone);
  });

  it.each([
    '1234@c.us',
    '123456789012345678901@c.us',
    '120363043968066561@g.us',
    '-100123',
    '',
    '@c.us',
    '7900111223a@c.us',
    '７９００１１１２２３３@c.us',
    '79001112233@c.usx',
    ' 79001112233@c.us',
    '123456789012345678901',
  ])('answers undefined for a group, a malformed id or too few or too many digits: %j', (chatId) => {
    expect(phoneOfChatId(chatId)).toBeUndefined();
  });
});
