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
import type { Session } from '../engine/conversation/session.js';
import { DIALOG_IDLE_NS, DIALOG_SESSIONS_NS, sharedRecords } from '../engine/shared.js';
import { createStore } from '../store/create.js';
import type { EngineStore } from '../store/types.js';
import { identityOf } from './clients.js';

/** A session as shown: the record, with the config name of its instance. */
export interface SessionView extends Session {
  /** Config name of the instance (its identity when config.yaml names it no more). */
  instance: string;
}

export interface SessionQuery {
  flow?: string;
  /** A chat id, or a phone number (digits, `+` and spaces allowed). */
  chat?: string;
}

/** The chat id a `CHAT` argument names: a chat id as given, a phone number as its personal chat. */
export function chatOf(arg: string): string {
  if (arg.includes('@')) return arg.trim();
  const digits = arg.replace(/[\s+()-]/g, '');
  return /^\d+$/.test(digits) ? personalChatId(digits) : arg.trim();
}

/** Identity -> config name, for every instance of the config. */
function instanceNames(config: Config): Map<string, string> {
  return new Map(Object.keys(config.instances).map((name) => [identityOf(config, name), name]));
}

/** The sessions of the store with their keys, newest activity first, filtered by flow and chat. */
async function sessionEntries(store: Pick<EngineStore, 'kv'>, config: Config, q: SessionQuery): Promise<Array<[string, SessionView]>> {
  const names = instanceNames(config);
  const chat = q.chat === undefined ? undefined : chatOf(q.chat);
  const out: Array<[string, SessionView]> = [];
  for (const [key, s] of await sharedRecords(store, DIALOG_SESSIONS_NS).entries()) {
    if ((q.flow !== undefined && s.flow !== q.flow) || (chat !== undefined && s.chatId !== chat)) continue;
    const identity = key.slice(0, key.indexOf('|'));
    out.push([key, { ...s, instance: names.get(identity) ?? identity }]);
  }
  return out.sort(([, a], [, b]) => b.updatedAt - a.updatedAt || a.chatId.localeCompare(b.chatId));
}

/** The sessions of the store, newest activity first, filtered by flow and chat. */
export async function listSessions(store: Pick<EngineStore, 'kv'>, config: Config, q: SessionQuery = {}): Promise<SessionView[]> {
  return (await sessionEntries(store, config, q)).map(([, v]) => v);
}

/** Deletes the chat's sessions (of one flow, or all) and their idle timers: its next message starts afresh. Answers those deleted. */
export async function resetSessions(
  store: Pick<EngineStore, 'kv'>,
  config: Config,
  q: SessionQuery & { chat: string },
): Promise<SessionView[]> {
  const gone = await sessionEntries(store, config, q);
  for (const [key] of gone) {
    await sharedRecords(store, DIALOG_IDLE_NS).delete(key);
    await sharedRecords(store, DIALOG_SESSIONS_NS).delete(key);
  }
  return gone.map(([, v]) => v);
}

/** The project's store opened for its sessions alone (no engine, no plugins). */
export function openSessions(config: Config): {
  list(q?: SessionQuery): Promise<SessionView[]>;
  reset(q: SessionQuery & { chat: string }): Promise<SessionView[]>;
  close(): Promise<void>;
} {
  const store = createStore(config.store, config.baseDir);
  return {
    list: (q) => listSessions(store, config, q),
    reset: (q) => resetSessions(store, config, q),
    close: () => store.close(),
  };
}
