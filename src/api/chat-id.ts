/**
 * Chat identifiers. The spec says a personal chat ID is "the phone number in
 * international digit form followed by the personal-chat suffix that the
 * messenger defines", and that group ids may begin with `-`. msgflow uses the
 * suffixes of the widely deployed implementation of this API (`@c.us` for
 * personal chats, `@g.us` for groups) and also accepts bare numeric ids
 * (negative for groups) as some messengers behind the same API use.
 */
export const PERSONAL_SUFFIX = '@c.us';
export const GROUP_SUFFIX = '@g.us';

const PERSONAL_RE = /^(\d{5,20})@c\.us$/;
const GROUP_RE = /^(\d[\d-]{4,40})@g\.us$/;
const NUMERIC_RE = /^-?\d{1,20}$/;

/**
 * A public username: `@` then 1 to 64 letters, digits, `_` or `.`. The one
 * rule for the client's validation, the jobs' input and the local service's
 * accounts.
 */
export const USERNAME_RE = /^@[A-Za-z0-9_.]{1,64}$/;

/** E.164 allows at most 15 digits; shorter than 7 is never a full international number. */
export const PHONE_MIN_DIGITS = 7;
export const PHONE_MAX_DIGITS = 15;
/**
 * checkWhatsapp's own documented range: a number with fewer or more digits is
 * refused with 400 "bad phone number, valid from 11 to 16 digits".
 */
export const CHECK_WHATSAPP_MIN_DIGITS = 11;
export const CHECK_WHATSAPP_MAX_DIGITS = 16;

export type ChatKind = 'personal' | 'group';

export function isPersonalChatId(chatId: string): boolean {
  return PERSONAL_RE.test(chatId);
}

/** Personal (`79001112233@c.us`), group (`120363...@g.us`) or numeric (`-100123`) id. */
export function isChatId(chatId: string): boolean {
  return PERSONAL_RE.test(chatId) || GROUP_RE.test(chatId) || NUMERIC_RE.test(chatId);
}

export function chatKind(chatId: string): ChatKind {
  return GROUP_RE.test(chatId) || chatId.startsWith('-') ? 'group' : 'personal';
}

/**
 * `79001112233@c.us` (5 to 20 digits) or `79001112233` (1 to 20 digits) ->
 * 79001112233; undefined for group or malformed ids. Read character by
 * character rather than by a regex match: every getMessage and status
 * reading asks, and a match allocates its array and groups.
 */
export function phoneOfChatId(chatId: string): number | undefined {
  const personal = chatId.endsWith(PERSONAL_SUFFIX);
  const digits = personal ? chatId.length - PERSONAL_SUFFIX.length : chatId.length;
  if (digits < (personal ? 5 : 1) || digits > 20) return undefined;
  for (let i = 0; i < digits; i++) {
    const c = chatId.charCodeAt(i);
    if (c < DIGIT_0 || c > DIGIT_9) return undefined;
  }
  const n = Number(personal ? chatId.slice(0, digits) : chatId);
  return Number.isSafeInteger(n) ? n : undefined;
}

const DIGIT_0 = 0x30;
const DIGIT_9 = 0x39;

export function personalChatId(phone: number | string): string {
  return `${phone}${PERSONAL_SUFFIX}`;
}
