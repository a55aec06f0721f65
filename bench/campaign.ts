/**
 * A campaign at size: messages.broadcast over N recipients (a CSV read as a
 * stream, a `${{ row.firstName }}` template, two A/B variants) from a pool of
 * 3 instances of the in-process local service, every rate limit and pace off,
 * against its peer: a bare loop of the same N sendMessage calls spread over
 * the same 3 instances of a fresh service.
 * The difference per send is what msgflow's engine adds beyond the
 * instances' own pace (records, reconciliation bookkeeping, pool choice,
 * caps, stickiness, the report).
 * Planning (`msgflow run --plan`): the time to write the campaign's plan
 * file (a dry run: nothing sent). Applying (`msgflow apply`): that plan sent
 * by a real run on a fresh service (its plan read, checked, and diffed
 * against the run's report).
 *
 * Each of the four (planning, applying, the campaign, the peer) runs in a child
 * process of its own, one after the other, so that a peak RSS
 * (process.resourceUsage().maxRSS) is that phase's alone: in one process the
 * campaign's peak could not be told from planning's (the heap V8 grew for
 * planning's garbage stays with the process). The peer's peak is the floor:
 * the process, the in-process service and the messages it queues. The
 * recipients' file is written by the parent before a phase starts.
 *
 *   npm run bench:campaign -- [--recipients 100000] [--store memory|lowdb|redis] [--recipient-hours]
 *   (--phase plan|apply|campaign|peer --dir <dir> --prefix <redis prefix>: one phase, what the parent runs)
 *
 * --recipient-hours: each recipient's own hours (`recipientTime`, open all
 * day, so nobody waits): the per-recipient time-zone work of a real campaign.
 * Store: the memory store (the engine's records, in the phase's process: its
 * memory counts in the peak RSS), the embedded lowdb store of `msgflow init`
 * (records on disk, their index in memory; in the phase's temp directory), or
 * the Redis on 127.0.0.1:6379 (keys under a throwaway prefix, deleted at the
 * end).
 */
import { mkdtemp, rm, writeFile, mkdir } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { spawn } from 'node:child_process';
import { API_METHODS } from '../src/api/methods.js';
import type { InstanceApi } from '../src/api/types.js';
import { createClient } from '../src/client/client.js';
import { LocalSchema } from '../src/local/config.js';
import { createLocalService, type LocalService } from '../src/local/service.js';
import { createInProcessTransport } from '../src/runtime/in-process-transport.js';
import { createActionTestContext, runAction } from '../src/actions/testing.js';
import { messagesBroadcast } from '../src/actions/messages-broadcast.js';
import type { BroadcastSummary } from '../src/actions/broadcast-core.js';
import { Redis } from 'ioredis';
import { createMemoryStore } from '../src/store/memory-store.js';
import { createRedisStore } from '../src/store/redis-store.js';
import { createLowdbStore } from '../src/store/lowdb-store.js';
import type { ActionRunPlan } from '../src/engine/action.js';

const { values } = parseArgs({
  options: {
    recipients: { type: 'string', default: '100000' },
    store: { type: 'string', default: 'memory' },
    'recipient-hours': { type: 'boolean', default: false },
    phase: { type: 'string' },
    dir: { type: 'string' },
    prefix: { type: 'string' },
  },
});
const N = Number(values.recipients);
if (!['memory', 'lowdb', 'redis'].includes(values.store)) throw new Error(`--store memory|lowdb|redis, got ${values.store}`);
const REDIS_PREFIX = values.prefix ?? `msgflow-bench-campaign-${process.pid}:`;
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

/**
 * The recipients' file of a phase that runs the broadcast, written by the
 * parent before the phase starts (as a campaign's file exists before its
 * run): making 100,000 rows in the phase's own process left their garbage
 * in its heap, and in its peak.
 */
async function writeRecipients(dir: string): Promise<void> {
  await mkdir(join(dir, 'data'), { recursive: true });
  const rows = ['phone,firstName'];
  for (let i = 0; i < N; i++) rows.push(`${phone(i)},P${i}`);
  await writeFile(join(dir, 'data/recipients.csv'), rows.join('\n') + '\n');
}

/** The service and the store of a phase that runs the broadcast (its recipients' file written if absent: a phase run alone). */
async function setup(dir: string) {
  if (!existsSync(join(dir, 'data/recipients.csv'))) await writeRecipients(dir);
  const { service: s, clients } = await service(dir);
  const store =
    values.store === 'redis'
      ? createRedisStore({ prefix: REDIS_PREFIX })
      : values.store === 'lowdb'
        ? createLowdbStore({ dir: join(dir, 'state') })
        : createMemoryStore();
  const context = (runId: string, plan?: ActionRunPlan) =>
    createActionTestContext({
      client: clients[0]!,
      store,
      baseDir: dir,
      runId,
      // A plan is written by a dry run and applied by a real one.
      ...(plan ? { dryRun: plan.mode === 'write', plan } : {}),
      instance: { name: 'a', identity: 'inst-a' },
      instances: Object.fromEntries(NAMES.map((n, i) => [n, clients[i]!])),
    });
  const close = async () => {
    await s.close();
    await store.close();
  };
  return { context, close };
}

/**
 * One broadcast in a phase's process, on a fresh setup of `dir`: its time.
 * `done` is how many recipients its summary says it planned or sent (N, or the phase failed).
 */
async function timedBroadcast(
  dir: string,
  runId: string,
  plan: ActionRunPlan | undefined,
  done: (s: BroadcastSummary) => number | undefined,
): Promise<number> {
  const { context, close } = await setup(dir);
  const started = performance.now();
  const summary = await runAction(messagesBroadcast, context(runId, plan), STEP);
  const ms = performance.now() - started;
  if (done(summary) !== N) throw new Error(`${runId}: ${done(summary)} of ${N}`);
  await close();
  return ms;
}

/** The campaign's plan (`msgflow run --plan`): its time. */
const planning = (dir: string) =>
  timedBroadcast(dir, 'plan', { mode: 'write', path: join(dir, 'plan.json'), flowHash: 'bench' }, (s) => s.planned?.recipients);

/** The campaign itself: its time. */
const campaign = (dir: string) => timedBroadcast(dir, 'run', undefined, (s) => s.sent);

/** `msgflow apply` of the plan the planning phase wrote in the same folder: its time. */
const applying = (dir: string) =>
  timedBroadcast(dir, 'apply', { mode: 'apply', path: join(dir, 'plan.json'), flowHash: 'bench' }, (s) => s.sent);

async function peer(dir: string): Promise<number> {
  const { service: s, clients } = await service(dir);
  const started = performance.now();
  for (let i = 0; i < N; i++) await clients[i % 3]!.sendMessage({ chatId: `${phone(i)}@c.us`, message: `Hello P${i}` });
  const ms = performance.now() - started;
  await s.close();
  return ms;
}

interface PhaseResult {
  ms: number;
  rssMb: number;
}

const PHASES = { plan: planning, apply: applying, campaign, peer } as const;
type Phase = keyof typeof PHASES;

/** Runs one phase in a child process of its own (this file with --phase): its time and its process's peak RSS. */
async function inChild(phase: Phase, dir: string): Promise<PhaseResult> {
  if (phase !== 'peer') await writeRecipients(dir);
  const args = [...process.execArgv, process.argv[1]!, ...process.argv.slice(2), '--phase', phase, '--dir', dir, '--prefix', REDIS_PREFIX];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  return new Promise<PhaseResult>((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out) as PhaseResult) : reject(new Error(`${phase} exited with ${code}`))));
  });
}

if (values.phase !== undefined) {
  const run = PHASES[values.phase as Phase];
  if (!run || values.dir === undefined) throw new Error(`--phase plan|apply|campaign|peer --dir <dir>, got ${values.phase}`);
  const ms = await run(values.dir);
  process.stdout.write(JSON.stringify({ ms, rssMb: process.resourceUsage().maxRSS / 1024 } satisfies PhaseResult));
} else {
  const root = await mkdtemp(join(tmpdir(), 'msgflow-bench-campaign-'));
  try {
    const plan = await inChild('plan', join(root, 'plan'));
    const applied = await inChild('apply', join(root, 'plan'));
    const ours = await inChild('campaign', join(root, 'campaign'));
    const bare = await inChild('peer', join(root, 'peer'));
    const perSend = (ms: number) => (ms * 1000) / N;
    console.log(
      `recipients: ${N}, pool of 3 in-process local instances, ${values.store} store${values['recipient-hours'] ? ', recipient hours' : ''}; each phase in its own process`,
    );
    console.log(`planning (msgflow run --plan): ${(plan.ms / 1000).toFixed(1)} s to write the plan; peak RSS ${plan.rssMb.toFixed(0)} MB`);
    console.log(
      `messages.broadcast: ${(ours.ms / 1000).toFixed(1)} s, ${perSend(ours.ms).toFixed(0)} µs/send; peak RSS ${ours.rssMb.toFixed(0)} MB`,
    );
    console.log(
      `the plan applied (msgflow apply): ${(applied.ms / 1000).toFixed(1)} s, ${perSend(applied.ms).toFixed(0)} µs/send; peak RSS ${applied.rssMb.toFixed(0)} MB`,
    );
    console.log(
      `peer (bare sendMessage loop over the same 3 instances): ${(bare.ms / 1000).toFixed(1)} s, ${perSend(bare.ms).toFixed(0)} µs/send; peak RSS ${bare.rssMb.toFixed(0)} MB`,
    );
    console.log(`engine overhead beyond the instances: ${((ours.ms - bare.ms) / N).toFixed(3)} ms/send`);
  } finally {
    await rm(root, { recursive: true, force: true });
    if (values.store === 'redis') await dropKeys(REDIS_PREFIX);
  }
}

/** Deletes the bench's keys from Redis. */
async function dropKeys(prefix: string): Promise<void> {
  const r = new Redis();
  for await (const keys of r.scanStream({ match: `${prefix}*`, count: 1000 }) as AsyncIterable<string[]>)
    if (keys.length) await r.unlink(...keys);
  await r.quit();
}
