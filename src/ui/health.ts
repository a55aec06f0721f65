/**
 * `GET /healthz`: the store's health (one small write and read back) and each
 * instance's reachability.
 */
import { connect } from 'node:net';
import type { Runtime } from '../runtime/runtime.js';

/** One instance's reachability as /healthz shows it. */
export type Reachability = { kind: 'local' | 'remote'; reachable: boolean | null; error?: string; note?: string };

export interface HealthAnswer {
  status: 'ok' | 'unavailable';
  store: { ok: boolean; driver: string; error?: string };
  instances: Record<string, Reachability>;
}

/**
 * How long the store's probe may take: a store that has not answered by then
 * is unavailable (a 503 within a second, not after the driver's own retries).
 */
export const STORE_PROBE_MS = 800;

/** The /healthz answer: `store.ok` false means a 503. */
export async function checkHealth(
  runtime: Runtime,
  reachability: () => Promise<Record<string, Reachability>>,
  probeMs = STORE_PROBE_MS,
): Promise<HealthAnswer> {
  const [store, instances] = await Promise.all([storeHealth(runtime, probeMs), reachability()]);
  return { status: store.ok ? 'ok' : 'unavailable', store, instances };
}

/** The store's part: its connection's state when it has one (no call while it is down), else a write read back, bounded by `probeMs`. */
async function storeHealth(runtime: Runtime, probeMs: number): Promise<HealthAnswer['store']> {
  const { driver, connection } = runtime.store;
  if (connection && !connection.reachable) {
    return { ok: false, driver, error: `the ${driver} store is unavailable: not connected (reconnecting)` };
  }
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<HealthAnswer['store']>((resolve) => {
    timer = setTimeout(
      () => resolve({ ok: false, driver, error: `the ${driver} store is unavailable: no answer within ${probeMs} ms` }),
      probeMs,
    );
  });
  try {
    return await Promise.race([probeStore(runtime), late]);
  } finally {
    clearTimeout(timer);
  }
}

/** A write and a read of one small record: proves the backend takes writes, at a cost that does not grow with history. */
async function probeStore(runtime: Runtime): Promise<HealthAnswer['store']> {
  const { driver } = runtime.store;
  try {
    const kv = runtime.store.kv('ui');
    await kv.set('healthz', runtime.clock.now());
    const back = await kv.get<number>('healthz');
    return back === undefined ? { ok: false, driver, error: 'a written record could not be read back' } : { ok: true, driver };
  } catch (e) {
    return { ok: false, driver, error: (e as Error).message };
  }
}

/** Resolves undefined when a TCP connection to `target`'s host and port opens, else the reason it did not. */
function tcpProbe(target: string): Promise<string | undefined> {
  return new Promise<string | undefined>((resolve) => {
    let u: URL;
    try {
      u = new URL(target);
    } catch {
      return resolve('not a URL');
    }
    const port = Number(u.port || (u.protocol === 'https:' ? 443 : 80));
    const socket = connect({ host: u.hostname, port, timeout: 2000 });
    socket.once('connect', () => {
      socket.destroy();
      resolve(undefined);
    });
    socket.once('timeout', () => {
      socket.destroy();
      resolve('no answer within 2 s');
    });
    socket.once('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
  });
}

async function probeInstance(runtime: Runtime, apiUrl: string, probeLocal: boolean): Promise<Reachability> {
  if (apiUrl !== 'local') {
    const error = await tcpProbe(apiUrl);
    return { kind: 'remote', reachable: error === undefined, ...(error ? { error: runtime.redactor.scrub(error) } : {}) };
  }
  if (!probeLocal) return { kind: 'local', reachable: null, note: 'not probed: the local service belongs to the daemon or to msgflow run' };
  try {
    const local = await runtime.local();
    const error = local.mode === 'remote' ? await tcpProbe(local.url) : undefined;
    return { kind: 'local', reachable: error === undefined, ...(error ? { error } : {}) };
  } catch (e) {
    return { kind: 'local', reachable: false, error: runtime.redactor.scrub((e as Error).message) };
  }
}

/**
 * Each instance's reachability for /healthz, without spending the instance's
 * API quota: a TCP connection to the remote service (or to the local service
 * of another msgflow process), or the in-process local service. Cached for a
 * few seconds so a probe loop cannot hammer anything.
 */
export function createReachability(runtime: Runtime, probeLocal: boolean, ttlMs = 10_000): () => Promise<Record<string, Reachability>> {
  let cached: { at: number; value: Record<string, Reachability> } | undefined;
  return async () => {
    if (cached && Date.now() - cached.at < ttlMs) return cached.value;
    const value: Record<string, Reachability> = {};
    await Promise.all(
      Object.entries(runtime.config.instances).map(async ([name, inst]) => {
        value[name] = await probeInstance(runtime, inst.apiUrl, probeLocal);
      }),
    );
    cached = { at: Date.now(), value };
    return value;
  };
}
