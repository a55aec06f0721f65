/**
 * Instance-wide pauses as the store holds them (e.g. checkAccount's
 * rate_limit_exceeded): one record per instance and scope in the shared
 * namespace `pauses`, key `${identity}:${scope}`, written and honoured by the
 * jobs. Listed and lifted here for `msgflow pauses` and the in-process
 * EngineClient; runs waiting on a pause re-read it from the store (whatever
 * process or host they run in), so a lifted one lets them call again at once.
 */
import { PAUSES_NAMESPACE, type CheckPause } from '../actions/check-account-bulk.js';
import type { Config } from '../config/load.js';
import { createStore } from '../store/create.js';
import type { EngineStore } from '../store/types.js';
import type { PauseInfo } from './engine-client/types.js';

/** One pause record (checkAccount.bulk's CheckPause is the one writer's shape). */
export type PauseRecord = Omit<CheckPause, 'scope'> & { scope: string };

/** The engine kv namespace of `ctx.shared('pauses')`. */
const PAUSES_NS = `shared:${PAUSES_NAMESPACE}`;

/** A pause as EngineClients answer it: the record's fields, nothing else (a view's `key` and `active` left out). */
export function toPauseInfo(p: Omit<PauseInfo, 'since' | 'retryAfterMs'> & Partial<Pick<PauseInfo, 'since' | 'retryAfterMs'>>): PauseInfo {
  return {
    instance: p.instance,
    identity: p.identity,
    scope: p.scope,
    ...(p.since !== undefined ? { since: p.since } : {}),
    until: p.until,
    ...(p.retryAfterMs !== undefined ? { retryAfterMs: p.retryAfterMs } : {}),
    reason: p.reason,
  };
}

/** Every pause record with its key, in force or not. */
export function pauseRecords(store: EngineStore): Promise<Array<[string, PauseRecord]>> {
  return store.kv(PAUSES_NS).entries<PauseRecord>();
}

/** The pauses in force at `now`. */
export async function activePauses(store: EngineStore, now: number): Promise<PauseRecord[]> {
  return (await pauseRecords(store)).flatMap(([, p]) => (p.until > now ? [p] : []));
}

/** Deletes the pauses of `target` (the instance's config name or its identity); answers those lifted. */
export async function liftPausesOf(store: EngineStore, target: string): Promise<PauseRecord[]> {
  const kv = store.kv(PAUSES_NS);
  const lifted: PauseRecord[] = [];
  for (const [key, p] of await pauseRecords(store)) {
    if (p.instance !== target && p.identity !== target) continue;
    await kv.delete(key);
    lifted.push(p);
  }
  return lifted;
}

/**
 * The project's store opened for its pauses alone (no engine, no plugins):
 * `msgflow pauses` works whatever else of the project fails to load.
 */
export function openPauses(config: Config): {
  active(now: number): Promise<PauseRecord[]>;
  lift(target: string): Promise<PauseRecord[]>;
  close(): Promise<void>;
} {
  const store = createStore(config.store, config.baseDir);
  return {
    active: (now) => activePauses(store, now),
    lift: (target) => liftPausesOf(store, target),
    close: () => store.close(),
  };
}
