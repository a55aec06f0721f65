/**
 * Instance-wide pauses as the store holds them (e.g. checkAccount's
 * rate_limit_exceeded): one record per instance and scope in the shared
 * namespace `pauses`, key `${identity}:${scope}`, written and honoured by the
 * jobs. Listed and lifted here for `msgflow pauses` and the in-process
 * EngineClient; runs waiting on a pause re-read it from the store (whatever
 * process or host they run in), so a lifted one lets them call again at once.
 */
import type { Config } from '../config/load.js';
import { listPauses, type PauseRecord } from '../engine/run/pauses.js';
import { liftWithAlerts } from '../engine/alerts/campaign.js';
import { createStore } from '../store/create.js';
import type { EngineStore } from '../store/types.js';
import type { InstancePause } from './engine-client/types.js';

export type { PauseRecord };

/** A pause as EngineClients answer it: the record's fields, nothing else (a view's `key` and `active` left out). */
export function toInstancePause(
  p: Omit<InstancePause, 'since' | 'retryAfterMs'> & Partial<Pick<InstancePause, 'since' | 'retryAfterMs'>>,
): InstancePause {
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

/** A record as shown, or undefined when another version wrote it without the fields a view needs. */
function shown(p: Partial<PauseRecord>): PauseRecord | undefined {
  if (typeof p.instance !== 'string' || typeof p.identity !== 'string' || typeof p.until !== 'number' || typeof p.reason !== 'string')
    return undefined;
  return { scope: '', since: 0, retryAfterMs: 0, ...p } as PauseRecord;
}

/** Every pause record with its key, in force or not (engine/run/pauses.ts owns them). */
export async function pauseRecords(store: EngineStore): Promise<Array<[string, PauseRecord]>> {
  return (await listPauses(store)).flatMap(([k, p]) => {
    const r = shown(p);
    return r ? [[k, r] as [string, PauseRecord]] : [];
  });
}

/** The pauses in force at `now`. */
export async function activePauses(store: EngineStore, now: number): Promise<PauseRecord[]> {
  return (await pauseRecords(store)).flatMap(([, p]) => (p.until > now ? [p] : []));
}

/**
 * Deletes the pauses of `target` (the instance's config name or its identity); answers those lifted.
 * A campaign's pause lifted is its campaign-resumed alert (engine/alerts/campaign.ts).
 */
export async function liftPausesOf(store: EngineStore, target: string, now = Date.now()): Promise<PauseRecord[]> {
  return (await liftWithAlerts(store, { name: target, identity: target }, now)).flatMap(([, p]) => shown(p) ?? []);
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
