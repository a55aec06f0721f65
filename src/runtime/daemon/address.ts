/**
 * Where the daemon's dashboard listens, recorded in the store so that a
 * `msgflow run` beside it (same store, same config) can hand it the run:
 * the run then executes in the daemon and shows live in its dashboard. The
 * record holds no token: the CLI reads `ui.token` from the same config.yaml.
 */
import { defaultHostId, describeHolder, holderDead } from '../../engine/run/ownership.js';
import type { EngineStore } from '../../store/types.js';
import { isLoopbackHost } from '../../ui/safety.js';

/** The `ui` namespace of the store's key-value records (shared with /healthz). */
const NAMESPACE = 'ui';
const KEY = 'daemon';

export interface DaemonUiRecord {
  /** The dashboard's address, e.g. `http://127.0.0.1:7071`; null when the daemon serves none (`--no-ui`, port busy). */
  url: string | null;
  /** Why `url` is null, in words for the CLI. */
  reason?: string;
  /** The daemon's pid and host id: the record counts only while the daemon's lease names the same. */
  pid: number;
  host: string;
  /** @default Date.now() at the daemon's start */
  startedAt: number;
}

export async function recordDaemonUi(store: EngineStore, record: DaemonUiRecord): Promise<void> {
  await store.kv(NAMESPACE).set(KEY, record);
}

/** Removes the record, if it is still this process's (a newer daemon's is left alone). */
export async function clearDaemonUi(store: EngineStore, pid: number, host: string): Promise<void> {
  const kv = store.kv(NAMESPACE);
  const cur = await kv.get<DaemonUiRecord>(KEY);
  if (cur && cur.pid === pid && cur.host === host) await kv.delete(KEY);
}

export async function readDaemonUi(store: EngineStore): Promise<DaemonUiRecord | undefined> {
  return store.kv(NAMESPACE).get<DaemonUiRecord>(KEY);
}

/** A daemon's dashboard a client may talk to (see createHttpEngineClient). */
export interface DaemonTarget {
  /** The dashboard's address, e.g. `http://127.0.0.1:7071`. */
  url: string;
  /** The config's ui.token ('' for none). */
  token: string;
}

/**
 * The daemon to hand runs to: a live `msgflow start` on this store with a
 * dashboard reachable from here. Otherwise `note` says why the run stays in
 * this process (undefined when no daemon runs).
 */
export async function findDaemon(store: EngineStore, token: string): Promise<{ target?: DaemonTarget; note?: string }> {
  const lease = await store.getLease('daemon');
  const hostId = defaultHostId();
  if (!lease || holderDead(lease, hostId)) return {};
  const who = `msgflow start, ${describeHolder(lease)}`;
  const rec = await readDaemonUi(store);
  if (!rec || rec.pid !== lease.pid || rec.host !== lease.host)
    return { note: `the daemon (${who}) recorded no dashboard address: the run executes here` };
  if (!rec.url) return { note: `the daemon (${who}) serves no dashboard (${rec.reason ?? 'ui off'}): the run executes here` };
  if (rec.host !== hostId && isLoopbackHost(new URL(rec.url).hostname)) {
    return { note: `the daemon (${who}) serves its dashboard on its own host only (${rec.url}): the run executes here` };
  }
  return { target: { url: rec.url, token } };
}
