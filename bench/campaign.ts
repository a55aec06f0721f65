/**
 * A campaign at size: messages.broadcast over N recipients (a CSV read as a
 * stream, a `${{ row.firstName }}` template, two A/B variants) from a pool of
 * 3 instances of the in-process local service, every rate limit and pace off,
 * against its peer measured in the same process: a bare loop of the same N
 * sendMessage calls spread over the same 3 instances of a fresh service.
 * The difference per send is what msgflow's engine adds beyond the
 * instances' own pace (records, reconciliation bookkeeping, pool choice,
 * caps, stickiness, the report). Peak RSS is the process's after the
 * campaign (process.resourceUsage().maxRSS), before the peer runs.
 * Planning (`msgflow run --plan`): the time to write the campaign's plan
 * file, measured first (a dry run: nothing sent), in the same process.
 *
 *   npm run bench:campaign -- [--recipients 100000] [--store memory|redis] [--recipient-hours]
 *
 * --recipient-hours: each recipient's own hours (`recipientTime`, open all
 * day, so nobody waits): the per-recipient time-zone work of a real campaign.
 * Store: the memory store (the engine's records, in this process: its
 * memory counts in the peak RSS), or the Redis on 127.0.0.1:6379 (keys
 * under a throwaway prefix, deleted at the end).
 */
import { mkdtemp, rm, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { API_METHODS } from '../src/api/methods.js';
import type { InstanceApi } from '../src/api/types.js';
import { createClient } from '../src/client/client.js';
import { LocalSchema } from '../src/local/config.js';
import { createLocalService, type LocalService } from '../src/local/service.js';
import { createInProcessTransport } from '../src/runtime/in-process-transport.js';
import { createActionTestContext, runAction } from '../src/actions/testing.js';
import { messagesBroadcast } from '../src/actions/messages-broadcast.js';
import { Redis } from 'ioredis';
import { createMemoryStore } from '../src/store/memory-store.js';
import { createRedisStore } from '../src/store/redis-store.js';
import type { ActionRunPlan } from '../src/engine/action.js';

const { values } = parseArgs({
  options: {
    recipients: { type: 'string', default: '100000' },
    store: { type: 'string', default: 'memory' },
    'recipient-hours': { type: 'boolean', default: false },
  },
});
const N = Number(values.recipients);
if (values.store !== 'memory' && values.store !== 'redis') throw new Error(`--store memory|redis, got ${values.store}`);
const REDIS_PREFIX = `msgflow-bench-campaign-${process.pid}:`;
const IDS = ['1101000801', '1101000802', '1101000803'];
const TOKEN = 'bench-token-0001';
const NAMES = ['a', 'b', 'c'];

async function service(dir: string): Promise<{ service: LocalService; clients: InstanceApi[] }> {
  const rates = Object.fromEntries(API_METHODS.map((m) => [m, 0]));
  const config = LocalSchema.parse({
    port: 0,
    dataDir: join(dir, 'local'),
    network: { population: [{ prefix: '7920', share: 1 }] },
    instances: IDS.map((idInstance) => ({ idInstance, apiTokenInstance: TOKEN, sendIntervalMs: 500, rateLimits: rates })),
  });
  const s = createLocalService(config, { baseDir: dir });
  await s.start();
  const clients = IDS.map((id) =>
    createClient({
      apiUrl: 'http://local.invalid',
      idInstance: id,
      apiTokenInstance: TOKEN,
      transport: createInProcessTransport(s, id, TOKEN),
      rateLimit: false,
      retries: 0,
    }),
  );
  return { service: s, clients };
}

const phone = (i: number) => String(79_200_000_000 + i);

const STEP = {
  file: 'data/recipients.csv',
  variants: [
    { name: 'short', weight: 2, message: { text: 'Hello ${{ row.firstName }}' } },
    { name: 'long', weight: 1, message: { text: 'Hello ${{ row.firstName }}, spring prices are in.' } },
  ],
  pool: { instances: NAMES },
  follow: { deadline: 0 },
  report: 'reports/campaign.csv',
  ...(values['recipient-hours'] ? { recipientTime: { hours: { default: '00:00-23:59' } } } : {}),
};

/** The campaign's plan, then the campaign itself: each one's time; the peak RSS once the plan is written. */
async function campaign(dir: string): Promise<{ planMs: number; planRssMb: number; ms: number }> {
  await mkdir(join(dir, 'data'), { recursive: true });
  const rows = ['phone,firstName'];
  for (let i = 0; i < N; i++) rows.push(`${phone(i)},P${i}`);
  await writeFile(join(dir, 'data/recipients.csv'), rows.join('\n') + '\n');
  const { service: s, clients } = await service(dir);
  const store = values.store === 'redis' ? createRedisStore({ prefix: REDIS_PREFIX }) : createMemoryStore();
  const context = (runId: string, plan?: ActionRunPlan) =>
    createActionTestContext({
      client: clients[0]!,
      store,
      baseDir: dir,
      runId,
      ...(plan ? { dryRun: true, plan } : {}),
      instance: { name: 'a', identity: 'inst-a' },
      instances: Object.fromEntries(NAMES.map((n, i) => [n, clients[i]!])),
    });
  let started = performance.now();
  const planned = await runAction(
    messagesBroadcast,
    context('plan', { mode: 'write', path: join(dir, 'plan.json'), flowHash: 'bench' }),
    STEP,
  );
  const planMs = performance.now() - started;
  const planRssMb = process.resourceUsage().maxRSS / 1024;
  if (planned.planned?.recipients !== N) throw new Error(`planned ${planned.planned?.recipients} of ${N}`);
  started = performance.now();
  const summary = await runAction(messagesBroadcast, context('run'), STEP);
  const ms = performance.now() - started;
  if (summary.sent !== N) throw new Error(`sent ${summary.sent} of ${N}`);
  await s.close();
  await store.close();
  return { planMs, planRssMb, ms };
}

async function peer(dir: string): Promise<number> {
  const { service: s, clients } = await service(dir);
  const started = performance.now();
  for (let i = 0; i < N; i++) await clients[i % 3]!.sendMessage({ chatId: `${phone(i)}@c.us`, message: `Hello P${i}` });
  const ms = performance.now() - started;
  await s.close();
  return ms;
}

const root = await mkdtemp(join(tmpdir(), 'msgflow-bench-campaign-'));
try {
  const { planMs, planRssMb, ms: ours } = await campaign(join(root, 'campaign'));
  const rssMb = process.resourceUsage().maxRSS / 1024;
  const bare = await peer(join(root, 'peer'));
  const perSend = (ms: number) => (ms * 1000) / N;
  console.log(
    `recipients: ${N}, pool of 3 in-process local instances, ${values.store} store${values['recipient-hours'] ? ', recipient hours' : ''}`,
  );
  console.log(`planning (msgflow run --plan): ${(planMs / 1000).toFixed(1)} s to write the plan; peak RSS ${planRssMb.toFixed(0)} MB`);
  console.log(`messages.broadcast: ${(ours / 1000).toFixed(1)} s, ${perSend(ours).toFixed(0)} µs/send; peak RSS ${rssMb.toFixed(0)} MB`);
  console.log(`peer (bare sendMessage loop over the same 3 instances): ${(bare / 1000).toFixed(1)} s, ${perSend(bare).toFixed(0)} µs/send`);
  console.log(`engine overhead beyond the instances: ${((ours - bare) / N).toFixed(3)} ms/send`);
} finally {
  await rm(root, { recursive: true, force: true });
  if (values.store === 'redis') await dropKeys(REDIS_PREFIX);
}

/** Deletes the bench's keys from Redis. */
async function dropKeys(prefix: string): Promise<void> {
  const r = new Redis();
  for await (const keys of r.scanStream({ match: `${prefix}*`, count: 1000 }) as AsyncIterable<string[]>)
    if (keys.length) await r.unlink(...keys);
  await r.quit();
}
