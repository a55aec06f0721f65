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

/** The /healthz answer: `store.ok` false means a 503. */
export async function checkHealth(runtime: Runtime, reachability: () => Promise<Record<string, Reachability>>): Promise<HealthAnswer> {
  let store: HealthAnswer['store'];
  try {
    // A write and a read of one small record: proves the backend takes writes, at a cost that does not grow with history.
    const kv = runtime.store.kv('ui');
    await kv.set('healthz', runtime.clock.now());
    const back = await kv.get<number>('healthz');
    store =
      back === undefined
        ? { ok: false, driver: runtime.store.driver, error: 'a written record could not be read back' }
        : { ok: true, driver: runtime.store.driver };
  } catch (e) {
    store = { ok: false, driver: runtime.store.driver, error: (e as Error).message };
  }
  const instances = await reachability();
  return { status: store.ok ? 'ok' : 'unavailable', store, instances };
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
