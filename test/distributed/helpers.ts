/**
 * Projects for the BullMQ executor tests: `msgflow serve` (the local service
 * over HTTP), a config.yaml with the redis store and `executor: bullmq`
 * under a fresh key prefix, and a cleanup that deletes every key of it.
 */
import { randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import { tempDir, writeData } from '../support/local-service.js';
import { E2E_ID, E2E_TOKEN, serveYaml, startProxy, writeProject, type Proxy, type ServeInstance } from '../jobs/helpers/cli.js';
import { deleteKeys, redisReachable, redisUrl } from '../support/redis.js';
import { spawnCli, type Proc } from '../support/spawn.js';
import { waitFor } from '../support/wait.js';

export type { Proc };

/** SIGKILL unless already gone; resolves once it is. */
export function kill(p: Proc | undefined): Promise<unknown> {
  return p ? p.kill() : Promise.resolve();
}

/** test/support's waitFor, with a process's output in the timeout error. */
export function until<T>(what: string, f: () => T | Promise<T>, timeoutMs = 30_000, proc?: Proc): Promise<NonNullable<T>> {
  return waitFor(what, f, { timeoutMs, intervalMs: 100, ...(proc ? { context: () => proc.output() } : {}) });
}

async function startServe(dir: string): Promise<{ proc: Proc; url: string }> {
  const proc = spawnCli(['serve', '--config', 'serve.yaml'], dir);
  const url = await until('msgflow serve to listen', () => /listening on (http:\/\/[\d.:]+)/.exec(proc.output())?.[1], 30_000, proc);
  return { proc, url };
}

/** One `msgflow serve` for several projects, each with an instance of its own. */
export interface SharedServe {
  url: string;
  /** idInstance of each named instance. */
  ids: Record<string, string>;
  close(): Promise<void>;
}

/**
 * `msgflow serve` with one instance per name (settings as writeProject's:
 * sendIntervalMs, checkAccountLimit), so that the tests of a file share one
 * service process instead of starting one each.
 */
export async function sharedServe(instances: Record<string, Omit<ServeInstance, 'id'>>): Promise<SharedServe> {
  const dir = await tempDir('msgflow-bullmq-serve-');
  const ids: Record<string, string> = {};
  const list = Object.entries(instances).map(([name, o], i) => ({ ...o, id: (ids[name] = String(Number(E2E_ID) + 100 + i)) }));
  await writeData(dir, 'serve.yaml', serveYaml(list));
  const serve = await startServe(dir);
  return {
    url: serve.url,
    ids,
    close: async () => void (await kill(serve.proc)),
  };
}

/** Whether the Redis tests run: they fail without Redis in CI (or with MSGFLOW_REQUIRE_REDIS), and skip with a message elsewhere. */
export async function redisOrSkip(): Promise<boolean> {
  const up = await redisReachable();
  if (up) return true;
  if (process.env.CI || process.env.MSGFLOW_REQUIRE_REDIS)
    throw new Error(`no Redis answers at ${redisUrl}: the BullMQ executor tests need it (CI / MSGFLOW_REQUIRE_REDIS is set)`);
  console.warn(`skipping the BullMQ executor tests: no Redis answers at ${redisUrl} (set MSGFLOW_TEST_REDIS_URL)`);
  return false;
}

export interface Project {
  dir: string;
  serveUrl: string;
  prefix: string;
  /** Calls that reached the service (with `proxy: true`). */
  calls: Proxy['calls'];
  spawn(...args: string[]): Proc;
  admin(what: string): Promise<any>;
  /** Messages per chatId that reached the service (lastOutgoingMessages: sent and still queued). */
  outgoing(): Promise<Map<string, number>>;
  close(): Promise<void>;
}

/**
 * executor.lockDurationMs of the projects: a killed worker's items go back
 * to the queue within this (+ the 1 s stalled check), while the items of a
 * live worker whose process is starved of CPU (the suite runs its files at
 * once on 2 cores; BullMQ renews the locks every half of this) keep theirs.
 * At 2 s, renewals came late under load and live workers' items were taken
 * over and recorded ITEM_OUTCOME_UNKNOWN.
 */
const LOCK_MS = 5000;

/**
 * A project whose `default` instance is `msgflow serve`'s (its own, or the
 * instance `o.shared` names in a shared one), on a fresh Redis prefix.
 */
export async function distributedProject(
  o: {
    instance?: Record<string, unknown>;
    executor?: string;
    proxy?: boolean;
    shared?: { serve: SharedServe; instance: string };
    /** The `default` instance's client-side rate limit (YAML under the instance). @default rateLimit: false */
    clientLimits?: string;
  } = {},
): Promise<Project> {
  const dir = await tempDir('msgflow-bullmq-');
  const prefix = `msgflow-test-bullmq-${randomBytes(4).toString('hex')}`;
  await writeProject(dir, { proxyUrl: 'http://unused.invalid', instance: o.instance });
  const serve = o.shared ? { url: o.shared.serve.url, proc: undefined } : await startServe(dir);
  const id = o.shared ? o.shared.serve.ids[o.shared.instance]! : E2E_ID;
  const procs: Proc[] = serve.proc ? [serve.proc] : [];
  // Optionally through a proxy that records every call reaching the service.
  const proxy = o.proxy ? await startProxy(() => serve.url) : undefined;
  await writeData(
    dir,
    'config.yaml',
    `instances:
  default:
    apiUrl: ${proxy?.url ?? serve.url}
    idInstance: "${id}"
    apiTokenInstance: "${E2E_TOKEN}"
    ${o.clientLimits ?? 'rateLimit: false'}
flowsDir: flows
logLevel: warn
store:
  driver: redis
  url: ${redisUrl}
  prefix: "${prefix}:"
executor:
  driver: bullmq
  prefix: ${prefix}-bull
  lockDurationMs: ${LOCK_MS}
  stalledIntervalMs: 1000
${o.executor ?? ''}
ui: { port: 0 }
`,
  );
  return {
    dir,
    serveUrl: serve.url,
    prefix,
    calls: proxy?.calls ?? [],
    spawn: (...args) => {
      const p = spawnCli([...args, '--config', 'config.yaml'], dir);
      procs.push(p);
      return p;
    },
    admin: async (what) => (await fetch(`${serve.url}/_local/waInstance${id}/${what}/${E2E_TOKEN}`)).json(),
    async outgoing() {
      const res = await fetch(`${serve.url}/waInstance${id}/lastOutgoingMessages/${E2E_TOKEN}?minutes=1440`);
      const per = new Map<string, number>();
      for (const m of (await res.json()) as { chatId: string }[]) per.set(m.chatId, (per.get(m.chatId) ?? 0) + 1);
      return per;
    },
    async close() {
      await Promise.all(procs.map(kill));
      await proxy?.close();
      await deleteKeys(prefix);
    },
  };
}

/** Resolves the exit code, failing with the output on a timeout. */
export async function exitOf(p: Proc, timeoutMs: number): Promise<number | null> {
  const code = await Promise.race([p.exited, new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), timeoutMs))]);
  expect(code, p.output()).not.toBe('timeout');
  return code as number | null;
}
