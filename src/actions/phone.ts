/**
 * Phone numbers and usernames as they arrive from spreadsheets and forms.
 * The service wants international digits only, so formatting characters are
 * removed here and anything that still is not a plausible number is reported
 * to the user instead of being sent (a malformed check still counts against
 * the messenger's per-number limits).
 */

import { PHONE_MAX_DIGITS, PHONE_MIN_DIGITS, USERNAME_RE } from '../api/chat-id.js';

/** Characters people use to format numbers: spaces, `+`, dashes, brackets, dots. */
const FORMATTING = /[\s+\-().[\]{}\u00a0\u2010-\u2015]/g;

/**
 * A first group that is the digit 8 alone (`8 800 …`, `8 (900) …`, `8-900-…`):
 * the trunk prefix of a number dialled within its country. No country code is
 * 8, so this is never an international number, and which country it belongs
 * to cannot be known. Digits written together (`88005553535`) cannot be told
 * from a number with country code 880 and are read as international.
 */
const TRUNK_PREFIX_8 = /^\+?8[\s\-().[\]{}\u00a0\u2010-\u2015]/;

export { PHONE_MIN_DIGITS, PHONE_MAX_DIGITS };

export type PhoneResult = { ok: true; phone: number; digits: string } | { ok: false; reason: string };

/**
 * Normalises a phone number: `+7 (900) 111-22-33` → 79001112233. The rules,
 * as docs/jobs.md states them: formatting characters are removed; anything
 * else is invalid; 7 to 15 digits; a leading 0 or a lone leading 8 group (a
 * domestic number's prefix) is invalid, never guessed into a country.
 *
 * @example normalisePhone('+49 30-1234 567') // { ok: true, phone: 49301234567, digits: '49301234567' }
 */
export function normalisePhone(raw: unknown): PhoneResult {
  if (typeof raw === 'number') {
    if (!Number.isSafeInteger(raw) || raw <= 0) return { ok: false, reason: `'${raw}' is not a whole positive number` };
    raw = String(raw);
  }
  if (typeof raw !== 'string') return { ok: false, reason: `expected a phone number, got ${raw === null ? 'null' : typeof raw}` };
  const text = raw.trim();
  if (text === '') return { ok: false, reason: 'empty phone number' };
  const digits = text.replace(FORMATTING, '');
  if (!/^\d+$/.test(digits))
    return { ok: false, reason: `'${text}' contains characters other than digits, spaces, +, dashes and brackets` };
  if (digits.startsWith('0')) return { ok: false, reason: `'${text}' starts with 0: write it in international form (country code first)` };
  if (TRUNK_PREFIX_8.test(text)) {
    return {
      ok: false,
      reason: `'${text}' starts with the trunk prefix 8 of a domestic number: write it in international form, its country code instead of the 8`,
    };
  }
  if (digits.length < PHONE_MIN_DIGITS || digits.length > PHONE_MAX_DIGITS)
    return {
      ok: false,
      reason: `'${text}' has ${digits.length} digits; an international number has ${PHONE_MIN_DIGITS} to ${PHONE_MAX_DIGITS}`,
    };
  return { ok: true, phone: Number(digits), digits };
}

export type UsernameResult = { ok: true; username: string; key: string } | { ok: false; reason: string };

/** A public username: `@` followed by letters, digits, `_` or `.` (the `@` is added when missing). */
export function normaliseUsername(raw: unknown): UsernameResult {
  if (typeof raw !== 'string') return { ok: false, reason: `expected a username, got ${raw === null ? 'null' : typeof raw}` };
  const text = raw.trim();
  if (text === '') return { ok: false, reason: 'empty username' };
  const u = text.startsWith('@') ? text : `@${text}`;
  if (!USERNAME_RE.test(u)) return { ok: false, reason: `'${text}' is not a username: @ followed by letters, digits, '_' or '.'` };
  // Usernames are case-insensitive on the messengers that have them: `key` de-duplicates
  // spellings, while the username is sent as written.
  return { ok: true, username: u, key: u.toLowerCase() };
}
