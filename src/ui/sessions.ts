/**
 * GET /api/sessions: the dialogs' sessions (engine/conversation/sessions.ts),
 * newest activity first, with their state, vars and last lines, and the
 * chats handed to a human (waiting for one). Read from the store, so what
 * any daemon sharing it does shows here.
 */
import { identityOf } from '../config/identity.js';
import { Handovers, type Handover } from '../engine/conversation/handover.js';
import { sessionEntries, type SessionView } from '../engine/conversation/sessions.js';
import type { Runtime } from '../runtime/runtime.js';

export interface SessionsAnswer {
  sessions: SessionView[];
  /** Chats handed to a human now, oldest first. */
  handovers: Handover[];
}

/** The answer of GET /api/sessions (at most `limit` sessions). */
export async function listSessionsApi(runtime: Runtime, limit = 500): Promise<SessionsAnswer> {
  const { config, store, clock } = runtime;
  const names = new Map(Object.keys(config.instances).map((n) => [identityOf(config, n), n]));
  const sessions = (await sessionEntries(store, names)).slice(0, limit).map(([, s]) => s);
  const identityFor = (name: string) => (config.instances[name] ? identityOf(config, name) : name);
  const handovers = await new Handovers({ store, clock, identityFor }).list();
  return { sessions, handovers };
}
