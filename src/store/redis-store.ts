/**
 * The Redis driver: the same EngineStore on a Redis server, so several
 * machines can share run state. A write counts once Redis acknowledged it:
 * that survives `kill -9` of msgflow; surviving a Redis restart depends on
 * the server's persistence (AOF/RDB) settings.
 *
 * Keys (all under `prefix`, default `msgflow:`):
 *   runs                      sorted set: run id by startedAt
 *   run:<id>                  JSON of the RunRecord
 *   run:<id>:inputs           JSON of the resolved inputs
 *   run:<id>:steps            hash step -> JSON;  run:<id>:step-order  list of step ids
 *   run:<id>:items            list of ItemResult JSON (append-only, like the file log)
 *   run:<id>:waits            hash key -> WaitRecord JSON
 *   run:<id>:journal:<stream> list of JSON entries (a step's append-only journal)
 *   kv:<namespace>            hash key -> JSON
 *   lease:<name>              JSON of the Lease, with a PX TTL (SET NX; compare-and-set scripts)
 */
import { Redis, type RedisOptions } from 'ioredis';
import type { DurableState } from './types.js';
import { runNotFound } from './errors.js';
import { applyRunPatch, filterRuns } from './run-records.js';
import type { EngineStore, ItemResult, Lease, RunQuery, RunRecord, StepRecord, WaitRecord } from './types.js';

export interface RedisStoreOptions {
  /** @default redis://127.0.0.1:6379 */
  url?: string;
  /** Key prefix, so that several msgflow deployments can share a server. @default msgflow: */
  prefix?: string;
  /** Extra ioredis options. */
  redis?: RedisOptions;
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

const ttlOf = (expiresAt: number) => String(Math.max(1, Math.ceil(expiresAt - Date.now())));

const parse = <T>(s: string | null | undefined): T | undefined => (s == null ? undefined : (JSON.parse(s) as T));

/** @example const store = createRedisStore({ url: 'redis://127.0.0.1:6379' }); */
export function createRedisStore(options: RedisStoreOptions = {}): EngineStore {
  const p = options.prefix ?? 'msgflow:';
  // Auto-pipelining batches the commands of items finishing together, like the file log's group commit.
  const redis = new Redis(options.url ?? 'redis://127.0.0.1:6379', { enableAutoPipelining: true, lazyConnect: false, ...options.redis });
  const k = {
    runs: `${p}runs`,
    run: (id: string) => `${p}run:${id}`,
    inputs: (id: string) => `${p}run:${id}:inputs`,
    steps: (id: string) => `${p}run:${id}:steps`,
    order: (id: string) => `${p}run:${id}:step-order`,
    items: (id: string) => `${p}run:${id}:items`,
    waits: (id: string) => `${p}run:${id}:waits`,
    kv: (ns: string) => `${p}kv:${ns}`,
    journal: (id: string, stream: string) => `${p}run:${id}:journal:${stream}`,
    lease: (name: string) => `${p}lease:${name}`,
  };

  function kv(namespace: string): DurableState {
    const key = k.kv(namespace);
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
        const all = await redis.hgetall(key);
        return Object.keys(all)
          .filter((f) => f.startsWith(prefix))
          .sort()
          .map((f) => [f, JSON.parse(all[f]) as T] as [string, T]);
      },
    };
  }

  return {
    driver: 'redis',
    async createRun(run) {
      await redis.multi().set(k.run(run.id), JSON.stringify(run)).zadd(k.runs, run.startedAt, run.id).exec();
    },
    async updateRun(id, patch) {
      // One process owns a run at a time, so read-modify-write needs no lock.
      const cur = parse<RunRecord>(await redis.get(k.run(id)));
      if (!cur) throw runNotFound(id);
      const next = applyRunPatch(cur, patch);
      await redis.set(k.run(id), JSON.stringify(next));
      return next;
    },
    async getRun(id) {
      return parse<RunRecord>(await redis.get(k.run(id)));
    },
    async listRuns(query: RunQuery = {}) {
      const ids = await redis.zrange(k.runs, 0, -1);
      if (ids.length === 0) return [];
      const raw = await redis.mget(ids.map(k.run));
      return filterRuns(raw.flatMap((r) => (r ? [JSON.parse(r) as RunRecord] : [])), query);
    },
    async saveInputs(runId, inputs) {
      await redis.set(k.inputs(runId), JSON.stringify(inputs));
    },
    async loadInputs(runId) {
      return parse(await redis.get(k.inputs(runId)));
    },
    async saveStep(step) {
      const [[, added]] = (await redis.multi().hset(k.steps(step.runId), step.step, JSON.stringify(step)).exec()) as [[unknown, number]];
      if (added === 1) await redis.rpush(k.order(step.runId), step.step);
    },
    async getSteps(runId) {
      const [order, all] = await Promise.all([redis.lrange(k.order(runId), 0, -1), redis.hgetall(k.steps(runId))]);
      return order.flatMap((s) => (all[s] ? [JSON.parse(all[s]) as StepRecord] : []));
    },
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
      await redis.rpush(k.journal(runId, stream), ...entries.map((e) => JSON.stringify(e)));
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
    async getWait(runId, key) {
      return parse<WaitRecord>(await redis.hget(k.waits(runId), key));
    },
    async deleteWait(runId, key) {
      await redis.hdel(k.waits(runId), key);
    },
    async listWaits(runId) {
      return Object.values(await redis.hgetall(k.waits(runId))).map((v) => JSON.parse(v) as WaitRecord);
    },
    async acquireLease(name, lease) {
      const cur = (await redis.eval(LEASE_ACQUIRE, 1, k.lease(name), JSON.stringify(lease), lease.token, ttlOf(lease.expiresAt))) as string | null;
      return cur ? parse<Lease>(cur) : undefined;
    },
    async renewLease(name, token, expiresAt) {
      return (await redis.eval(LEASE_RENEW, 1, k.lease(name), token, String(expiresAt), ttlOf(expiresAt))) === 1;
    },
    async releaseLease(name, token) {
      await redis.eval(LEASE_RELEASE, 1, k.lease(name), token);
    },
    async getLease(name) {
      return parse<Lease>(await redis.get(k.lease(name)));
    },
    kv,
    async close() {
      await redis.quit().catch(() => redis.disconnect());
    },
  };
}
