/**
 * Checks of the hottest request bodies (getMessage, cached checkAccount: what
 * bulk jobs and pollers call thousands of times a second; a campaign's plain
 * sendMessage, checked when prepared, by the client and by the local
 * service, for each of 100,000 recipients) without zod. A
 * check only ever says "valid, and this is what the schema would give": a
 * body it is not sure of (a wrong type, a key it does not know, a value the
 * schema would transform) goes to the schema, which answers it with its own
 * error text (the field named). So no error message can differ from the
 * schema's, and the output is the schema's output, key for key.
 */
import { isChatId, PHONE_MAX_DIGITS } from './chat-id.js';
import type { ApiMethod } from './methods.js';
import { ID_MESSAGE_MIN, MESSAGE_MAX } from './schemas.js';

/** A body as the schema would give it back, or undefined: "ask the schema". */
type FastCheck = (input: Record<string, unknown>) => Record<string, unknown> | undefined;

const PHONE_MAX = 10 ** PHONE_MAX_DIGITS - 1;

/** A string the schema's `nonEmpty` passes: non-empty, no NUL. */
function plainString(v: unknown): v is string {
  return typeof v === 'string' && v.length > 0 && !v.includes('\u0000');
}

/** Whether every own key of `input` is one of `known` and none holds undefined (zod keeps such a key). */
function onlyKnownKeys(input: Record<string, unknown>, known: readonly string[]): boolean {
  for (const k in input) {
    if (!Object.hasOwn(input, k)) continue;
    if (!known.includes(k) || input[k] === undefined) return false;
  }
  return true;
}

const GET_MESSAGE_KEYS = ['chatId', 'idMessage'] as const;
const CHECK_ACCOUNT_KEYS = ['phoneNumber', 'force'] as const;
const SEND_MESSAGE_KEYS = ['chatId', 'message'] as const;

const FAST_CHECKS: Partial<Record<ApiMethod, FastCheck>> = {
  getMessage: (b) => {
    const { chatId, idMessage } = b;
    if (!plainString(chatId) || !isChatId(chatId) || !plainString(idMessage) || idMessage.length < ID_MESSAGE_MIN) return undefined;
    return onlyKnownKeys(b, GET_MESSAGE_KEYS) ? { chatId, idMessage } : undefined;
  },
  // A text to a chat and nothing else: any option (a quote, a preview, typing) goes to the schema.
  sendMessage: (b) => {
    const { chatId, message } = b;
    if (!plainString(chatId) || !isChatId(chatId) || !plainString(message) || message.length > MESSAGE_MAX) return undefined;
    return onlyKnownKeys(b, SEND_MESSAGE_KEYS) ? { chatId, message } : undefined;
  },
  // A number only: a phoneNumber given as a string of digits, or a username, goes to the schema.
  checkAccount: (b) => {
    const { phoneNumber, force } = b;
    if (typeof phoneNumber !== 'number' || !Number.isInteger(phoneNumber) || phoneNumber <= 0 || phoneNumber > PHONE_MAX) return undefined;
    if (force !== undefined && typeof force !== 'boolean') return undefined;
    return onlyKnownKeys(b, CHECK_ACCOUNT_KEYS) ? { phoneNumber, force: force ?? false } : undefined;
  },
};

/**
 * The body `method` would be given by its schema, when a fast check is sure
 * of it; undefined otherwise (then the schema decides, errors included).
 */
export function fastCheck(method: ApiMethod, input: unknown): Record<string, unknown> | undefined {
  const check = FAST_CHECKS[method];
  if (check === undefined || input === null || typeof input !== 'object' || Array.isArray(input)) return undefined;
  return check(input as Record<string, unknown>);
}
