/**
 * Where the daemon's dashboard listens, recorded in the store so that a
 * `msgflow run` beside it (same store, same config) can hand it the run:
 * the run then executes in the daemon and shows live in its dashboard. The
 * record holds no token: the CLI reads `ui.token` from the same config.yaml.
 */
import type { EngineStore } from '../store/types.js';

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
