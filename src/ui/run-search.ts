/**
 * Searching run history (GET /api/runs?chat=…&phone=…&code=…, the Runs
 * page's search box): by chat id, by phone number, by error code, over the
 * records the run index holds in memory (no store read per search).
 *
 * What a run says about chats: the notification that started it (`event`:
 * its chat, its sender), the outputs it gave back (a sub-flow's), and its
 * error (its code; a chat id or number its message names).
 */
import { MsgflowError } from '../api/errors.js';
import type { RunRecord } from '../store/types.js';

export interface RunSearch {
  /** A chat id, e.g. 79001234567@c.us or 120363…@g.us: runs whose event or outputs name it. */
  chat?: string;
  /** A phone number, any punctuation: runs whose event or outputs name a chat or sender of that number. */
  phone?: string;
  /** An error code, e.g. SUBFLOW_FAILED: runs that ended with it. */
  code?: string;
}

const bad = (field: string, reason: string) => new MsgflowError('UI_BAD_REQUEST', { field, reason });

/** The search parts of a runs query, validated; undefined when there are none. */
export function parseRunSearch(params: URLSearchParams): RunSearch | undefined {
  const out: RunSearch = {};
  const chat = params.get('chat')?.trim();
  if (chat) {
    if (!/^[^\s@]+@(c|g)\.us$/.test(chat)) throw bad('chat', `expected a chat id such as 79001234567@c.us, got '${chat}'`);
    out.chat = chat;
  }
  const phone = params.get('phone')?.trim();
  if (phone) {
    const digits = phone.replace(/[\s()+.-]/g, '');
    if (!/^\d{5,20}$/.test(digits)) throw bad('phone', `expected a phone number (5 to 20 digits), got '${phone}'`);
    out.phone = digits;
  }
  const code = params.get('code')?.trim();
  if (code) {
    if (!/^[A-Za-z][A-Za-z0-9_]*$/.test(code)) throw bad('code', `expected an error code such as ACTION_FAILED, got '${code}'`);
    out.code = code.toUpperCase();
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

/** Every string inside a value (iterative: an event is at most 64 levels deep, its strings few). */
function strings(value: unknown): string[] {
  const out: string[] = [];
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === 'string') out.push(v);
    else if (v !== null && typeof v === 'object') stack.push(...(Array.isArray(v) ? v : Object.values(v)));
  }
  return out;
}

/** The number of a chat id or phone-like text: `79001112233@c.us` → 79001112233. */
const numberOf = (s: string) => s.replace(/@.*$/, '').replace(/[\s()+.-]/g, '');

/** Whether a run matches every part of the search. */
export function runMatcher(search: RunSearch): (r: RunRecord) => boolean {
  return (r) => {
    if (search.code && r.error?.code !== search.code) return false;
    if (!search.chat && !search.phone) return true;
    const said = [...strings(r.event), ...strings(r.outputs)];
    const message = r.error?.message ?? '';
    if (search.chat && !said.includes(search.chat) && !message.includes(search.chat)) return false;
    if (search.phone) {
      const phone = search.phone;
      if (!said.some((s) => numberOf(s) === phone) && !message.includes(phone)) return false;
    }
    return true;
  };
}
