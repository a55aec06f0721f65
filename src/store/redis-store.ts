/**
 * The Redis driver: the same EngineStore on a Redis server, so several
 * machines can share run state. A write counts once Redis acknowledged it:
 * that survives `kill -9` of msgflow; surviving a Redis restart depends on
 * the server's persistence (AOF/RDB) settings.
 *
 * Keys (all under `prefix`; createStore derives it from the project, see
 * config.ts, so two projects on one Redis database never see each other):
 *   runs                      sorted set: run id by startedAt
 *   run:<id>                  JSON of the RunRecord
 *   run:<id>:inputs           JSON of the resolved inputs
 *   run:<id>:steps            hash step -> JSON;  run:<id>:step-order  list of step ids
 *   run:<id>:items            list of ItemResult JSON (append-only, like the file log)
 *   run:<id>:waits            hash key -> WaitRecord JSON
 *   run:<id>:journal:<stream> list of JSON entries (a step's append-only journal)
 *   run:<id>:journals         set of the run's journal streams (what deleteRun deletes)
 *   kv:<namespace>            hash key -> JSON (entries(prefix) pages with HSCAN MATCH)
 *
 * Outages: the client reconnects forever, with a backoff capped at
 * `maxReconnectDelayMs`. A call made while Redis is unreachable waits for
 * `retriesPerCall` reconnection attempts, then fails with
 * MsgflowError('STORE_UNAVAILABLE', { driver: 'redis', reason }) and is
 * dropped from the client's queues (never sent later, behind the caller's
 * back; a command Redis received just before the connection broke may have
 * been applied, like any command whose answer was lost). The engine turns
 * that error into an `interrupted` run, resumable once Redis is back. One
 * warning is logged when an outage starts and one line when Redis answers
 * again, never a stack per command.
 *   lease:<name>              JSON of the Lease, with a PX TTL (SET NX; compare-and-set scripts)
 */
import { MsgflowError } from '../api/errors.js';
import type { Logger } from '../util/logger.js';
import { escapeControl } from '../util/printable.js';
import { createRequire } from 'node:module';
import type * as IORedis from 'ioredis';
import type { Redis, RedisOptions } from 'ioredis';
import type { DurableState } from './types.js';
import { runNotFound } from './errors.js';
import { guardStore } from './guard.js';
import { applyRunPatch, filterRuns, refuseUnfinished } from './run-records.js';
import { RESUMABLE_STATUSES, runItemsNamespace } from './types.js';
import type { EngineStore, ItemResult, Lease, RunQuery, RunRecord, StepRecord, StoreConnection, WaitRecord } from './types.js';

export interface RedisStoreOptions {
  /** @default redis://127.0.0.1:6379 */
  url?: string;
  /** Key prefix, so that several msgflow projects can share a server. @default msgflow: */
  prefix?: string;
  /** Where the outage and recovery lines go. @default one line on stderr each */
  logger?: Logger;
  /** Reconnection attempts a call waits for while Redis is unreachable before failing with STORE_UNAVAILABLE. @default 2 */
  retriesPerCall?: number;
  /** Cap of the reconnection backoff (100 ms, 200 ms, 400 ms, ... up to this). @default 2000 */
  maxReconnectDelayMs?: number;
  /** Extra ioredis options. */
  redis?: RedisOptions;
}

const stderrLogger: Logger = {
  debug: () => {},
  info: (m) => process.stderr.write(`${escapeControl(m)}\n`),
  warn: (m) => process.stderr.write(`${escapeControl(m)}\n`),
  error: (m) => process.stderr.write(`${escapeControl(m)}\n`),
};

/** Where the store is, for messages: host and port only (a URL may carry a password). */
function describeServer(url: string): string {
  try {
    const u = new URL(url);
    return `${u.hostname}:${u.port || '6379'}`;
  } catch {
    return 'the configured server';
  }
}

/** Errors of the connection (not of a command Redis answered) become STORE_UNAVAILABLE. */
function unavailable(e: unknown): unknown {
  if (e instanceof MsgflowError) return e;
  const err = e as Error;
  // A ReplyError is Redis answering (wrong type, out of memory...): not an outage.
  if (err?.name === 'ReplyError' || err instanceof SyntaxError) return e;
  const reason = err?.name === 'MaxRetriesPerRequestError' ? 'no answer after reconnecting' : (err?.message ?? String(e));
  return new MsgflowError('STORE_UNAVAILABLE', { driver: 'redis', reason }, { cause: e });
}

/** A glob pattern matching fields that start with `prefix` (HSCAN MATCH). */
function globPrefix(prefix: string): string {
  return prefix.replace(/[*?[\]\\]/g, (c) => `\\${c}`) + '*';
}
// Leases: compare the holder's token server-side, so a renewal or release
// never touches a lease someone else took over in between.
const LEASE_ACQUIRE = `local cur = redis.call('GET', KEYS[1])
if cur then
  local ok, c = pcall(cjson.decode, cur)
  if ok and c.token ~= ARGV[2] then return cur end
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[3])
return false`;
const LEASE_RENEW = `local cur = redis.call('GET', KEYS[1])
if not cur then return 0 end
local c = cjson.decode(cur)
if c.token ~= ARGV[1] then return 0 end
c.expiresAt = tonumber(ARGV[2])
redis.call('SET', KEYS[1], cjson.encode(c), 'PX', ARGV[3])
return 1`;
const LEASE_RELEASE = `local cur = redis.call('GET', KEYS[1])
if cur and cjson.decode(cur).token == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 0`;

// A run record replaced only if it is still what the writer last saw
// (compare-and-set): nil when set, else what Redis holds ('' when nothing).
const RUN_REPLACE = `local cur = redis.call('GET', KEYS[1])
if cur == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2])
  return false
end
return cur or ''`;
// A step upserted and, the first time, added to the run's step order: one round trip, both or neither.
const STEP_SAVE = `if redis.call('HSET', KEYS[1], ARGV[1], ARGV[2]) == 1 then redis.call('RPUSH', KEYS[2], ARGV[1]) end
return 0`;

/** The commands defineCommand adds for the scripts above. */
interface StoreScripts {
  msgflowLeaseAcquire(key: string, lease: string, token: string, ttlMs: string): Promise<string | null>;
  msgflowLeaseRenew(key: string, token: string, expiresAt: string, ttlMs: string): Promise<number>;
  msgflowLeaseRelease(key: string, token: string): Promise<unknown>;
  msgflowRunReplace(key: string, expected: string, next: string): Promise<string | null>;
  msgflowStepSave(steps: string, order: string, step: string, json: string): Promise<number>;
}

const ttlOf = (expiresAt: number) => String(Math.max(1, Math.ceil(expiresAt - Date.now())));

const parse = <T>(s: string | null | undefined): T | undefined => (s == null ? undefined : (JSON.parse(s) as T));

/** @example const store = createRedisStore({ url: 'redis://127.0.0.1:6379' }); */
export function createRedisStore(options: RedisStoreOptions = {}): EngineStore {
  const conn = connect(options);
  const k = redisKeys(options.prefix ?? 'msgflow:');
  const { redis } = conn;
  // Every operation that talks to Redis (leases and kv included) fails with STORE_UNAVAILABLE on an outage.
  const store: EngineStore = {
    driver: 'redis',
    ...runOps(conn, k),
    deleteRun: (id: string) => deleteRun(redis, k, id),
    ...logOps(redis, k),
    ...leaseOps(conn, k),
    connection: conn.state,
    kv: (namespace) => redisState(redis, k.kv(namespace)),
    async close() {
      conn.closing = true;
      // QUIT waits for an answer that never comes during an outage: disconnect then.
      if (redis.status !== 'ready') redis.disconnect();
      else await redis.quit().catch(() => redis.disconnect());
    },
  };
  return guardStore(store, unavailable);
}

interface Connection {
  redis: Redis;
  scripts: StoreScripts;
  /** Set by close(): the disconnection that follows is no outage. */
  closing: boolean;
  /** What EngineStore.connection shows: the client's state, and who to tell when Redis answers again. */
  state: StoreConnection;
}

/** The connection's state from the client's status; listeners are told on each `ready` that ends an outage. */
function connectionState(redis: Redis): { state: StoreConnection; recovered(): void } {
  const listeners = new Set<() => void>();
  return {
    state: {
      get reachable() {
        return redis.status === 'ready';
      },
      onReachable(listener) {
        listeners.add(listener);
        return () => void listeners.delete(listener);
      },
    },
    recovered: () => {
      for (const l of [...listeners]) l();
    },
  };
}

/** The client, with the lease scripts defined and one log line per outage and per recovery. */
function connect(options: RedisStoreOptions): Connection {
  const url = options.url ?? 'redis://127.0.0.1:6379';
  const logger = options.logger ?? stderrLogger;
  const maxDelay = options.maxReconnectDelayMs ?? 2000;
  // Required here, not imported at the top: every CLI process loads this
  // module (the store drivers are picked at run time), and a project on
  // lowdb or memory should not pay for loading ioredis (CommonJS, so it can
  // be required synchronously).
  const { Redis: RedisClient } = createRequire(import.meta.url)('ioredis') as typeof IORedis;
  // Auto-pipelining batches the commands of items finishing together, like the file log's group commit.
  const redis = new RedisClient(url, {
    enableAutoPipelining: true,
    lazyConnect: false,
    // Reconnect forever: an outage pauses runs, it never ends the store.
    retryStrategy: (times) => Math.min(100 * 2 ** Math.min(times - 1, 10), maxDelay),
    maxRetriesPerRequest: options.retriesPerCall ?? 2,
    ...options.redis,
  });
  // The lease scripts as named commands: ioredis sends EVALSHA (the script is
  // loaded once per connection, not shipped with every renewal).
  redis.defineCommand('msgflowLeaseAcquire', { numberOfKeys: 1, lua: LEASE_ACQUIRE });
  redis.defineCommand('msgflowLeaseRenew', { numberOfKeys: 1, lua: LEASE_RENEW });
  redis.defineCommand('msgflowLeaseRelease', { numberOfKeys: 1, lua: LEASE_RELEASE });
  redis.defineCommand('msgflowRunReplace', { numberOfKeys: 1, lua: RUN_REPLACE });
  redis.defineCommand('msgflowStepSave', { numberOfKeys: 2, lua: STEP_SAVE });
  const watched = connectionState(redis);
  const conn: Connection = { redis, scripts: redis as unknown as StoreScripts, closing: false, state: watched.state };
  const server = describeServer(url);
  let downSince: number | undefined;
  // A connection lost without an error event (the server closed it) is an outage too, for the listeners.
  let lost = false;
  redis.on('close', () => {
    if (!conn.closing) lost = true;
  });
  // Without an 'error' listener ioredis prints "Unhandled error event" with a stack on every attempt.
  redis.on('error', (e: Error) => {
    if (downSince !== undefined || conn.closing) return;
    downSince = Date.now();
    logger.warn(`redis store at ${server} unavailable (${e.message}); reconnecting, runs that need it are interrupted until it is back`, {
      driver: 'redis',
      server,
      reason: e.message,
    });
  });
  redis.on('ready', () => {
    if (downSince !== undefined) {
      const secs = ((Date.now() - downSince) / 1000).toFixed(1);
      downSince = undefined;
      logger.info(`redis store at ${server} reachable again after ${secs} s`, { driver: 'redis', server });
    }
    if (!lost) return;
    lost = false;
    watched.recovered();
  });
  return conn;
}

type Keys = ReturnType<typeof redisKeys>;

function redisKeys(p: string) {
  return {
    runs: `${p}runs`,
    run: (id: string) => `${p}run:${id}`,
    inputs: (id: string) => `${p}run:${id}:inputs`,
    steps: (id: string) => `${p}run:${id}:steps`,
    order: (id: string) => `${p}run:${id}:step-order`,
    items: (id: string) => `${p}run:${id}:items`,
    waits: (id: string) => `${p}run:${id}:waits`,
    kv: (ns: string) => `${p}kv:${ns}`,
    journal: (id: string, stream: string) => `${p}run:${id}:journal:${stream}`,
    journals: (id: string) => `${p}run:${id}:journals`,
    lease: (name: string) => `${p}lease:${name}`,
  };
}

/** A kv namespace: one hash. */
function redisState(redis: Redis, key: string): DurableState {
  return {
    async get<T>(field: string) {
      return parse<T>(await redis.hget(key, field));
    },
    async set(field, value) {
      if (value === undefined) await redis.hdel(key, field);
      else await redis.hset(key, field, JSON.stringify(value));
    },
    async delete(field) {
      await redis.hdel(key, field);
    },
    async entries<T>(prefix = '') {
      // HSCAN with MATCH: a prefix of a big namespace never fetches all of it in one answer.
      const found = new Map<string, string>();
      let cursor = '0';
      do {
        const [next, flat] = await redis.hscan(key, cursor, 'MATCH', globPrefix(prefix), 'COUNT', 1000);
        for (let i = 0; i < flat.length; i += 2) if (flat[i].startsWith(prefix)) found.set(flat[i], flat[i + 1]);
        cursor = next;
      } while (cursor !== '0');
      return [...found.keys()].sort().map((f) => [f, JSON.parse(found.get(f)!) as T] as [string, T]);
    },
  };
}

/**
 * Run records, inputs and steps. The record of a run in flight that this
 * process last wrote is remembered (as the JSON it wrote), so an update
 * costs one round trip: the patched record replaces it if Redis still holds
 * exactly that, else the update starts again from what Redis holds (a run
 * taken over by another process). Finished runs are forgotten.
 */
function runOps(
  { redis, scripts }: Connection,
  k: Keys,
): Pick<EngineStore, 'createRun' | 'updateRun' | 'getRun' | 'listRuns' | 'saveInputs' | 'loadInputs' | 'saveStep' | 'getSteps'> {
  const written = new Map<string, string>();
  const remember = (run: RunRecord, json: string) => {
    if (RESUMABLE_STATUSES.includes(run.status)) written.set(run.id, json);
    else written.delete(run.id);
  };
  return {
    async createRun(run) {
      const json = JSON.stringify(run);
      await redis.multi().set(k.run(run.id), json).zadd(k.runs, run.startedAt, run.id).exec();
      remember(run, json);
    },
    async updateRun(id, patch) {
      let cur = written.get(id) ?? (await redis.get(k.run(id)));
      for (;;) {
        if (!cur) {
          written.delete(id);
          throw runNotFound(id);
        }
        const next = applyRunPatch(JSON.parse(cur) as RunRecord, patch);
        const json = JSON.stringify(next);
        const held = await scripts.msgflowRunReplace(k.run(id), cur, json);
        if (held === null) {
          remember(next, json);
          return next;
        }
        cur = held;
      }
    },
    async getRun(id) {
      return parse<RunRecord>(await redis.get(k.run(id)));
    },
    async listRuns(query: RunQuery = {}) {
      const limit = query.limit === undefined ? Infinity : Math.max(0, query.limit);
      const out: RunRecord[] = [];
      // Newest first, a page at a time: a limit reads only the records it needs.
      for (let from = 0; out.length < limit; from += 100) {
        // A run finishes after it starts: with finishedBefore, only the runs started before it are read.
        const ids =
          query.finishedBefore === undefined
            ? await redis.zrevrange(k.runs, from, from + 99)
            : await redis.zrevrangebyscore(k.runs, `(${query.finishedBefore}`, '-inf', 'LIMIT', from, 100);
        if (ids.length === 0) break;
        const raw = await redis.mget(ids.map(k.run));
        out.push(
          ...filterRuns(
            raw.flatMap((r) => (r ? [JSON.parse(r) as RunRecord] : [])),
            { ...query, limit: undefined },
          ),
        );
        if (ids.length < 100) break;
      }
      return filterRuns(out, query);
    },
    async saveInputs(runId, inputs) {
      await redis.set(k.inputs(runId), JSON.stringify(inputs));
    },
    async loadInputs(runId) {
      return parse(await redis.get(k.inputs(runId)));
    },
    async saveStep(step) {
      await scripts.msgflowStepSave(k.steps(step.runId), k.order(step.runId), step.step, JSON.stringify(step));
    },
    async getSteps(runId) {
      const [order, all] = await Promise.all([redis.lrange(k.order(runId), 0, -1), redis.hgetall(k.steps(runId))]);
      return order.flatMap((s) => (all[s] ? [JSON.parse(all[s]) as StepRecord] : []));
    },
  };
}

/**
 * A finished run's keys, all at once. The run is not among runOps' remembered
 * records: those are runs in flight, which deleteRun refuses.
 */
async function deleteRun(redis: Redis, k: Keys, id: string): Promise<boolean> {
  const raw = await redis.get(k.run(id));
  if (!raw) return false;
  refuseUnfinished(JSON.parse(raw) as RunRecord);
  const streams = await redis.smembers(k.journals(id));
  const keys = [
    k.run(id),
    k.inputs(id),
    k.steps(id),
    k.order(id),
    k.items(id),
    k.waits(id),
    k.journals(id),
    k.kv(`run:${id}`),
    k.kv(runItemsNamespace(id)),
  ];
  await redis
    .multi()
    .zrem(k.runs, id)
    .del(...keys, ...streams.map((st) => k.journal(id, st)))
    .exec();
  return true;
}

/** The append-only item log and journals of a run, and its durable waits. */
function logOps(
  redis: Redis,
  k: Keys,
): Pick<EngineStore, 'appendItems' | 'getItems' | 'appendJournal' | 'readJournal' | 'setWait' | 'deleteWait' | 'listWaits'> {
  return {
    async appendItems(runId, items) {
      if (items.length === 0) return;
      await redis.rpush(k.items(runId), ...items.map((i) => JSON.stringify(i)));
    },
    async getItems(runId, step) {
      const out = new Map<number, ItemResult>();
      for (const line of await redis.lrange(k.items(runId), 0, -1)) {
        const r = JSON.parse(line) as ItemResult;
        if (r.step === step) out.set(r.index, r);
      }
      return out;
    },
    async appendJournal(runId, stream, entries) {
      if (entries.length === 0) return;
      // The stream is named in the run's set, so that deleteRun finds every journal without a SCAN.
      await redis
        .multi()
        .sadd(k.journals(runId), stream)
        .rpush(k.journal(runId, stream), ...entries.map((e) => JSON.stringify(e)))
        .exec();
    },
    async *readJournal<T>(runId: string, stream: string): AsyncIterable<T> {
      const key = k.journal(runId, stream);
      const end = await redis.llen(key);
      // Pages of 1,000: a long journal is never fetched in one answer.
      for (let from = 0; from < end; from += 1000) {
        const page = await redis.lrange(key, from, Math.min(from + 999, end - 1));
        for (const line of page) yield JSON.parse(line) as T;
      }
    },
    async setWait(runId, wait) {
      await redis.hset(k.waits(runId), wait.key, JSON.stringify(wait));
    },
    async deleteWait(runId, key) {
      await redis.hdel(k.waits(runId), key);
    },
    async listWaits(runId) {
      return Object.values(await redis.hgetall(k.waits(runId))).map((v) => JSON.parse(v) as WaitRecord);
    },
  };
}

/** Leases through the compare-and-set scripts. */
function leaseOps({ redis, scripts }: Connection, k: Keys): Pick<EngineStore, 'acquireLease' | 'renewLease' | 'releaseLease' | 'getLease'> {
  return {
    async acquireLease(name, lease) {
      const cur = await scripts.msgflowLeaseAcquire(k.lease(name), JSON.stringify(lease), lease.token, ttlOf(lease.expiresAt));
      return cur ? parse<Lease>(cur) : undefined;
    },
    async renewLease(name, token, expiresAt) {
      return (await scripts.msgflowLeaseRenew(k.lease(name), token, String(expiresAt), ttlOf(expiresAt))) === 1;
    },
    async releaseLease(name, token) {
      await scripts.msgflowLeaseRelease(k.lease(name), token);
    },
    async getLease(name) {
      return parse<Lease>(await redis.get(k.lease(name)));
    },
  };
}
