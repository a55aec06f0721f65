/**
 * Reading the dialogs' sessions as a whole, for operators (`msgflow
 * sessions`, the dashboard): a scan of the `dialog-sessions` namespace. A
 * dialog's own reads and writes touch one record each and never list.
 */
import type { EngineStore } from '../../store/types.js';
import { DIALOG_IDLE_NS, DIALOG_SESSIONS_NS, sharedRecords } from '../shared.js';
import type { Session } from './session.js';

/** A session as shown: the record, with the config name of its instance. */
export interface SessionView extends Session {
  /** Config name of the instance (its identity when the config names it no more). */
  instance: string;
}

export interface SessionQuery {
  flow?: string;
  /** A chat id. */
  chatId?: string;
}

/** The sessions with their keys, newest activity first; `names` maps identities to config names. */
export async function sessionEntries(
  store: Pick<EngineStore, 'kv'>,
  names: ReadonlyMap<string, string>,
  q: SessionQuery = {},
): Promise<Array<[string, SessionView]>> {
  const out: Array<[string, SessionView]> = [];
  for (const [key, s] of await sharedRecords(store, DIALOG_SESSIONS_NS).entries()) {
    if ((q.flow !== undefined && s.flow !== q.flow) || (q.chatId !== undefined && s.chatId !== q.chatId)) continue;
    const identity = key.slice(0, key.indexOf('|'));
    out.push([key, { ...s, instance: names.get(identity) ?? identity }]);
  }
  return out.sort(([, a], [, b]) => b.updatedAt - a.updatedAt || a.chatId.localeCompare(b.chatId));
}

/** Deletes the sessions `q` names and their idle timers: the chat's next message starts afresh. Answers those deleted. */
export async function resetSessionEntries(
  store: Pick<EngineStore, 'kv'>,
  names: ReadonlyMap<string, string>,
  q: SessionQuery & { chatId: string },
): Promise<SessionView[]> {
  const gone = await sessionEntries(store, names, q);
  for (const [key] of gone) {
    await sharedRecords(store, DIALOG_IDLE_NS).delete(key);
    await sharedRecords(store, DIALOG_SESSIONS_NS).delete(key);
  }
  return gone.map(([, v]) => v);
}
