/**
 * Dialog sessions as the store holds them (engine/conversation/session.ts):
 * one record per (instance, flow, chat) in the shared namespace
 * `dialog-sessions`, key `${identity}|${flow}|${chatId}`. Listed, shown and
 * reset here for `msgflow sessions` and the dashboard. Listing scans the
 * namespace (an operator's look); a dialog's own reads and writes touch one
 * record.
 */
import { personalChatId } from '../api/chat-id.js';
import type { Config } from '../config/load.js';
import { resetSessionEntries, sessionEntries, type SessionQuery, type SessionView } from '../engine/conversation/sessions.js';
import { createStore } from '../store/create.js';
import type { EngineStore } from '../store/types.js';
import { identityOf } from './clients.js';

export type { SessionView, SessionQuery };

/** The chat id a `CHAT` argument names: a chat id as given, a phone number as its personal chat. */
export function chatOf(arg: string): string {
  if (arg.includes('@')) return arg.trim();
  const digits = arg.replace(/[\s+()-]/g, '');
  return /^\d+$/.test(digits) ? personalChatId(digits) : arg.trim();
}

/** Identity -> config name, for every instance of the config. */
export function instanceNames(config: Config): Map<string, string> {
  return new Map(Object.keys(config.instances).map((name) => [identityOf(config, name), name]));
}

/** The sessions of the store, newest activity first, filtered by flow and chat (a chat id or phone number). */
export function listSessions(
  store: Pick<EngineStore, 'kv'>,
  config: Config,
  q: { flow?: string; chat?: string } = {},
): Promise<SessionView[]> {
  return sessionEntries(store, instanceNames(config), query(q)).then((list) => list.map(([, v]) => v));
}

/** Deletes the chat's sessions (of one flow, or all) and their idle timers: its next message starts afresh. Answers those deleted. */
export function resetSessions(store: Pick<EngineStore, 'kv'>, config: Config, q: { flow?: string; chat: string }): Promise<SessionView[]> {
  return resetSessionEntries(store, instanceNames(config), { ...query(q), chatId: chatOf(q.chat) });
}

function query(q: { flow?: string; chat?: string }): SessionQuery {
  return { ...(q.flow === undefined ? {} : { flow: q.flow }), ...(q.chat === undefined ? {} : { chatId: chatOf(q.chat) }) };
}

/** The project's store opened for its sessions alone (no engine, no plugins). */
export function openSessions(config: Config): {
  list(q?: { flow?: string; chat?: string }): Promise<SessionView[]>;
  reset(q: { flow?: string; chat: string }): Promise<SessionView[]>;
  close(): Promise<void>;
} {
  const store = createStore(config.store, config.baseDir);
  return {
    list: (q) => listSessions(store, config, q),
    reset: (q) => resetSessions(store, config, q),
    close: () => store.close(),
  };
}
