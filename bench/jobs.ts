/**
 * Bulk jobs at real sizes: checkAccount.bulk and contacts.import
 * over generated files of phone numbers, through the real runtime and engine
 * (createRuntime, a generated config.yaml in a temp project) against the
 * in-process local service with every limit and pause off, for the lowdb and
 * the redis store drivers. Each size/job/driver runs in a fresh child process,
 * so the peak RSS is that run's.
 *
 *   npm run bench:jobs -- [--sizes 10000,100000,1000000] [--jobs check,import]
 *                         [--drivers lowdb,redis] [--timeout 3600] [--kill] [--keep]
 *                         [--rounds 3] [--no-peer]
 *
 * Columns: records/s over the run (engine start to run end; the child's
 * start-up excluded), wall of the run, peak RSS of the child
 * (process.resourceUsage().maxRSS), and engine state on disk per record:
 * lowdb, the bytes of the state directory (.msgflow/state) over the records;
 * redis, the sum of MEMORY USAGE of the project's keys over the records
 * (memory, not disk: what the server holds, and what an RDB/AOF then stores).
 * The peer column: a bare loop over the same in-process service's handle()
 * (one awaited call per record, nothing else), run after each round of
 * msgflow's, and msgflow's rate as a multiple of it. With --rounds, medians.
 * The CPU column: the process's CPU time (user + system, every thread) over
 * the run per record, msgflow's and the peer's, and the peer's as a multiple
 * of msgflow's: on a machine shared with other work, wall rates swing with
 * its load, CPU time much less.
 *
 * Numbers are 7920xxxxxxx. With the local service's population rule
 * (`local.network.population`) 60% of them have an account; on a tree
 * without that rule the accounts are listed one by one in config.yaml, which
 * is only practical up to 100,000 numbers: larger sizes are then skipped.
 *
 * MSGFLOW_BENCH_NODE_ARGS adds node flags to the children, e.g.
 * '--cpu-prof --cpu-prof-dir=/tmp/prof' to profile a run (node refuses
 * --cpu-prof in NODE_OPTIONS).
 *
 * --kill: for the first size only, each job/driver is killed with SIGKILL
 * once about 40% of its records reached the service, then resumed in a new
 * process. The local service then runs in this (parent) process behind a
 * counting HTTP proxy, and the bench checks that every record reached the
 * service exactly once (checkAccount: one check per number; contacts.import:
 * one addContact or editContact per number).
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { API_METHODS } from '../src/api/methods.js';
import { loadConfig, resolveFromConfig } from '../src/config/load.js';
import { findFlow } from '../src/engine/flow/load.js';
import { NetworkSchema } from '../src/local/config.js';
import { createLocalService } from '../src/local/service.js';
import { createRuntime } from '../src/runtime/runtime.js';

const SELF = fileURLToPath(import.meta.url);
/** Extra node flags for the children, e.g. MSGFLOW_BENCH_NODE_ARGS='--cpu-prof --cpu-prof-dir=/tmp/prof' (node refuses --cpu-prof in NODE_OPTIONS). */
const childNodeArgs = (process.env.MSGFLOW_BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
const REDIS_URL = process.env.MSGFLOW_BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const ID = '1101000777';
const TOKEN = 'bench-token-5c1e9a';
const hasPopulation = 'population' in NetworkSchema.shape;

type Job = 'check' | 'import';
type Driver = 'lowdb' | 'redis';

interface ChildArgs {
  dir: string;
  flow: string;
  /** The peer instead of msgflow: a bare loop of this many calls over the in-process service's handle(). */
  bare?: number;
}

interface ChildResult {
  status: string;
  runMs: number;
  /** CPU time of the process (user + system, all threads) over the run. */
  cpuMs: number;
  /** After the run and a full GC: the JS heap in use and the memory outside it (Buffers, typed arrays), MB. */
  liveHeapMB?: number;
  externalMB?: number;
  maxRssMB: number;
  error?: string;
}

const phone = (i: number) => `7920${String(i).padStart(7, '0')}`;

// ---------------------------------------------------------------- child ---

/**
 * The peer: what a user's script over the same in-process service would do,
 * one call per record (checkAccount per number, addContact per contact),
 * awaited one at a time, with no cache, journal, dedup or report.
 */
async function bareLoop(args: ChildArgs, n: number): Promise<void> {
  const config = loadConfig(join(args.dir, 'config.yaml'));
  const service = createLocalService(config.local!, { baseDir: config.baseDir });
  await service.start();
  const check = args.flow === 'check';
  const path = `/waInstance${ID}/${check ? 'checkAccount' : 'addContact'}/${TOKEN}`;
  const headers = { 'content-type': 'application/json' };
  let failed = 0;
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < n; i++) {
    const body = check
      ? `{"phoneNumber":${phone(i)}}`
      : JSON.stringify({ chatId: `${phone(i)}@c.us`, firstName: `Lead ${i}`, lastName: 'Bench' });
    if ((await service.handle({ httpMethod: 'POST', path, headers, body })).status !== 200) failed++;
  }
  const runMs = performance.now() - t0;
  const cpuMs = cpuMsSince(cpu0);
  await service.close();
  const result: ChildResult = { status: 'succeeded', runMs, cpuMs, maxRssMB: Math.round(process.resourceUsage().maxRSS / 1024) };
  if (failed > 0 && check) Object.assign(result, { status: 'failed', error: `${failed} calls not answered 200` });
  process.stdout.write(`RESULT ${JSON.stringify(result)}\n`);
}

/** What stays allocated after a full GC (the children run with --expose-gc): the indexes a run keeps. */
function liveMemory(): Pick<ChildResult, 'liveHeapMB' | 'externalMB'> {
  (globalThis as { gc?: () => void }).gc?.();
  const m = process.memoryUsage();
  return { liveHeapMB: Math.round(m.heapUsed / 2 ** 20), externalMB: Math.round(m.external / 2 ** 20) };
}

function cpuMsSince(start: NodeJS.CpuUsage): number {
  const u = process.cpuUsage(start);
  return (u.user + u.system) / 1000;
}

async function child(args: ChildArgs): Promise<void> {
  if (args.bare !== undefined) return bareLoop(args, args.bare);
  const config = loadConfig(join(args.dir, 'config.yaml'));
  const runtime = await createRuntime({ config, command: 'run' });
  let result: ChildResult;
  try {
    const flow = findFlow(resolveFromConfig(config, config.flowsDir), args.flow, {
      registry: runtime.registry,
      baseDir: config.baseDir,
      instances: Object.keys(config.instances),
    });
    const t0 = performance.now();
    const cpu0 = process.cpuUsage();
    const [resumed] = await runtime.engine.resumeUnfinished([flow]);
    const handle = resumed ?? (await runtime.engine.start(flow, { trigger: 'manual' }));
    const run = await handle.done;
    result = {
      status: run.status,
      runMs: performance.now() - t0,
      cpuMs: cpuMsSince(cpu0),
      maxRssMB: Math.round(process.resourceUsage().maxRSS / 1024),
      ...liveMemory(),
      ...(run.error ? { error: run.error.message } : {}),
    };
  } finally {
    await runtime.close();
  }
  process.stdout.write(`RESULT ${JSON.stringify(result)}\n`);
}

// --------------------------------------------------------------- parent ---

async function writeLines(file: string, header: string, n: number, line: (i: number) => string): Promise<void> {
  await mkdir(join(file, '..'), { recursive: true });
  const out = createWriteStream(file);
  out.write(header + '\n');
  for (let i = 0; i < n; i++) if (!out.write(line(i) + '\n')) await new Promise<void>((r) => out.once('drain', () => r()));
  await new Promise<void>((resolve, reject) => out.end((e?: Error | null) => (e ? reject(e) : resolve())));
}

function localSection(n: number): string {
  const limits = API_METHODS.map((m) => `${m}: 0`).join(', ');
  const network = hasPopulation
    ? '    population: [{ prefix: "7920", share: 0.6 }]\n'
    : `    accounts:\n${Array.from({ length: n }, (_, i) => i)
        .filter((i) => i % 5 < 3)
        .map((i) => `      - { phone: ${phone(i)} }\n`)
        .join('')}`;
  return `local:
  port: 0
  network:
    deliveredAfterMs: 0
${network}  instances:
    - idInstance: "${ID}"
      apiTokenInstance: ${TOKEN}
      sendIntervalMs: 500
      rateLimits: { ${limits} }
      checkAccountLimit: { numbers: 1000000000, windowMinutes: 1 }
`;
}

/** A project: config.yaml, both flows, the data files. */
async function makeProject(n: number, driver: Driver, opts: { apiUrl?: string; prefix: string }): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), `msgflow-benchjobs-${n}-`));
  const store =
    driver === 'redis' ? `store: { driver: redis, url: "${REDIS_URL}", prefix: "${opts.prefix}" }\n` : 'store: { driver: lowdb }\n';
  const instance = opts.apiUrl
    ? `instances:\n  default:\n    apiUrl: ${opts.apiUrl}\n    idInstance: "${ID}"\n    apiTokenInstance: ${TOKEN}\n    rateLimit: false\n`
    : `instances:\n  default:\n    apiUrl: local\n    rateLimit: false\n`;
  await writeFile(join(dir, 'config.yaml'), instance + store + (opts.apiUrl ? '' : localSection(n)));
  await mkdir(join(dir, 'flows'), { recursive: true });
  await writeFile(
    join(dir, 'flows', 'check.yaml'),
    `name: check
steps:
  - id: check
    uses: checkAccount.bulk
    with: { file: data/numbers.csv, pace: { delay: 0, jitter: 0 }, report: reports/check.csv }
`,
  );
  await writeFile(
    join(dir, 'flows', 'import.yaml'),
    `name: import
steps:
  - id: import
    uses: contacts.import
    with: { file: data/contacts.csv, pace: { delay: 0, jitter: 0 }, report: reports/import.csv }
`,
  );
  await writeLines(join(dir, 'data', 'numbers.csv'), 'phone', n, phone);
  await writeLines(join(dir, 'data', 'contacts.csv'), 'phone,firstName,lastName', n, (i) => `${phone(i)},Lead ${i},Bench`);
  return dir;
}

/** A child's result, or an error with the end of its output. */
async function childResult(running: Running, timeoutS: number): Promise<ChildResult> {
  const r = await running.done;
  if (!r.result)
    throw new Error(
      `child ended without a result (code ${r.code}, ${r.signal ?? ''}${r.signal === 'SIGKILL' ? `: timeout ${timeoutS} s?` : ''}):\n${r.output.slice(-3000)}`,
    );
  return r.result;
}

interface Running {
  kill(): void;
  done: Promise<{ result?: ChildResult; code: number | null; signal: NodeJS.Signals | null; output: string }>;
}

function runChild(dir: string, flow: string, timeoutS: number, bare?: number): Running {
  const proc = spawn(
    process.execPath,
    [
      '--expose-gc',
      ...childNodeArgs,
      '--import',
      'tsx',
      SELF,
      '--child',
      JSON.stringify({ dir, flow, ...(bare === undefined ? {} : { bare }) } satisfies ChildArgs),
    ],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, NO_COLOR: '1' },
    },
  );
  let output = '';
  proc.stdout.on('data', (d) => (output += d));
  proc.stderr.on('data', (d) => (output = (output + d).slice(-20_000)));
  const timer = setTimeout(() => proc.kill('SIGKILL'), timeoutS * 1000);
  const done = new Promise<{ result?: ChildResult; code: number | null; signal: NodeJS.Signals | null; output: string }>((resolve) =>
    proc.on('exit', (code, signal) => {
      clearTimeout(timer);
      const m = /RESULT (\{.*\})/.exec(output);
      resolve({ result: m ? (JSON.parse(m[1]) as ChildResult) : undefined, code, signal, output });
    }),
  );
  return { kill: () => proc.kill('SIGKILL'), done };
}

async function dirBytes(dir: string): Promise<number> {
  let total = 0;
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return 0;
  }
  for (const e of entries) {
    const p = join(dir, e.name);
    if (e.isDirectory()) total += await dirBytes(p);
    else if (e.isFile()) total += (await stat(p)).size;
  }
  return total;
}

const escapeGlob = (s: string) => s.replace(/[*?[\]\\]/g, (c) => `\\${c}`);

/** Sum of MEMORY USAGE over the prefix's keys; `drop` deletes them afterwards. */
async function redisBytes(prefix: string, drop: boolean): Promise<number> {
  const r = new Redis(REDIS_URL);
  let total = 0;
  let cursor = '0';
  do {
    const [next, keys] = await r.scan(cursor, 'MATCH', `${escapeGlob(prefix)}*`, 'COUNT', 1000);
    for (const k of keys) total += Number((await r.call('MEMORY', 'USAGE', k, 'SAMPLES', '0')) ?? 0);
    if (drop && keys.length) await r.del(...keys);
    cursor = next;
  } while (cursor !== '0');
  await r.quit();
  return total;
}

/** The local service in this process, behind an HTTP proxy that counts write/check calls per number. */
async function countingService(dir: string, n: number) {
  const config = loadConfig(
    await (async () => {
      const file = join(dir, 'service.yaml');
      await writeFile(
        file,
        `instances:\n  default:\n    apiUrl: local\n${localSection(n).replace('local:\n', 'local:\n  dataDir: .msgflow/service\n')}`,
      );
      return file;
    })(),
  );
  const service = createLocalService(config.local!, { baseDir: dir });
  await service.start();
  const listener = await service.listen(0, '127.0.0.1');
  const counts = new Map<string, number>();
  let calls = 0;
  const proxy = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const method = (req.url ?? '').split('/')[2] ?? '';
      const num = /7920\d{7}/.exec(body.toString())?.[0];
      const up = http.request(listener.url + req.url, { method: req.method, headers: req.headers }, (r) => {
        const out: Buffer[] = [];
        r.on('data', (c) => out.push(c));
        r.on('end', () => {
          if (num && (method === 'checkAccount' || method === 'addContact' || method === 'editContact')) {
            const key = `${method === 'checkAccount' ? 'check' : 'import'}:${num}`;
            counts.set(key, (counts.get(key) ?? 0) + 1);
            calls++;
          }
          res.writeHead(r.statusCode ?? 502, r.headers);
          res.end(Buffer.concat(out));
        });
      });
      up.on('error', () => {
        res.writeHead(502);
        res.end();
      });
      up.end(body);
    });
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(proxy.address() as { port: number }).port}`,
    counts,
    calls: () => calls,
    reset() {
      counts.clear();
      calls = 0;
    },
    async close() {
      await new Promise<void>((r) => proxy.close(() => r()));
      await listener.close();
      await service.close();
    },
  };
}

interface Row {
  job: string;
  driver: string;
  records: string;
  perSec: string;
  wall: string;
  rss: string;
  bytes: string;
  peer: string;
  cpu: string;
  note: string;
}

/** A row before (or without) its figures. */
function blankRow(job: string, driver: string, n: number, note = ''): Row {
  return { job, driver, records: n.toLocaleString('en'), perSec: '-', wall: '-', rss: '-', bytes: '-', peer: '-', cpu: '-', note };
}

function printTable(rows: Row[]): void {
  const head: Row = {
    job: 'job',
    driver: 'driver',
    records: 'records',
    perSec: 'records/s',
    wall: 'wall',
    rss: 'peak RSS',
    bytes: 'engine bytes/record',
    peer: 'bare handle() loop: records/s (ratio)',
    cpu: 'CPU µs/record: msgflow / bare (ratio)',
    note: '',
  };
  const cols = Object.keys(head) as Array<keyof Row>;
  const width = Object.fromEntries(cols.map((c) => [c, Math.max(...[head, ...rows].map((r) => r[c].length))])) as Record<keyof Row, number>;
  const line = (r: Row) => `| ${cols.map((c) => r[c].padEnd(width[c])).join(' | ')} |`;
  console.log(line(head));
  console.log(`|${cols.map((c) => '-'.repeat(width[c] + 2)).join('|')}|`);
  for (const r of rows) console.log(line(r));
}

const fmtWall = (ms: number) =>
  ms < 60_000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;

async function parent(): Promise<void> {
  const { values } = parseArgs({
    options: {
      sizes: { type: 'string', default: '10000,100000,1000000' },
      jobs: { type: 'string', default: 'check,import' },
      drivers: { type: 'string', default: 'lowdb,redis' },
      timeout: { type: 'string', default: '3600' },
      kill: { type: 'boolean', default: false },
      rounds: { type: 'string', default: '1' },
      'no-peer': { type: 'boolean', default: false },
      keep: { type: 'boolean', default: false },
    },
  });
  const sizes = values.sizes
    .split(',')
    .map(Number)
    .filter((n) => n > 0);
  const jobs = values.jobs.split(',') as Job[];
  const drivers = values.drivers.split(',') as Driver[];
  const timeoutS = Number(values.timeout);
  const rounds = Math.max(1, Number(values.rounds));
  const jobName = { check: 'checkAccount.bulk', import: 'contacts.import' } as const;
  console.log(
    `node ${process.version}; ${hasPopulation ? 'population rule 7920 × 0.6' : 'no population rule on this tree: 60% of the numbers listed as accounts'}; ` +
      `limits and pacing off; ${values.kill ? `kill -9 + resume at ${sizes[0]}` : `sizes ${sizes.join(', ')}`}`,
  );
  const rows: Row[] = [];
  let failed = false;
  for (const n of values.kill ? sizes.slice(0, 1) : sizes) {
    if (!hasPopulation && n > 100_000) {
      for (const job of jobs)
        for (const driver of drivers) rows.push(blankRow(jobName[job], driver, n, 'skipped: needs local.network.population'));
      continue;
    }
    for (const driver of drivers) {
      for (const job of jobs) {
        const prefix = `msgflow-bench:${randomBytes(4).toString('hex')}:`;
        const service = values.kill ? await countingService(await mkdtemp(join(tmpdir(), 'msgflow-benchsvc-')), n) : undefined;
        const dir = await makeProject(n, driver, { prefix, ...(service ? { apiUrl: service.url } : {}) });
        const row = blankRow(jobName[job], driver, n);
        try {
          let result: ChildResult | undefined;
          let rss = 0;
          let runMs = 0;
          if (service) {
            const first = runChild(dir, job, timeoutS);
            const target = Math.floor(n * 0.4);
            while (service.calls() < target) {
              const settled = await Promise.race([first.done.then(() => true), new Promise((r) => setTimeout(() => r(false), 50))]);
              if (settled) break;
            }
            first.kill();
            const killed = await first.done;
            const atKill = service.calls();
            const second = runChild(dir, job, timeoutS);
            const resumed = await second.done;
            result = resumed.result;
            if (!result)
              throw new Error(
                `resumed child ended without a result (code ${resumed.code}, ${resumed.signal ?? ''}):\n${resumed.output.slice(-3000)}`,
              );
            rss = result.maxRssMB;
            runMs = result.runMs;
            const per = [...service.counts.entries()].filter(([k]) => k.startsWith(`${job}:`));
            const twice = per.filter(([, c]) => c > 1).length;
            const seen = per.length;
            const expected = job === 'check' ? n : Math.ceil(n * 0.6);
            const exact = twice === 0 && (job === 'check' ? seen === n : true);
            if (!exact) failed = true;
            row.note = `killed (${killed.signal}) after ${atKill} calls; ${seen} numbers reached the service (${expected} expected${job === 'import' ? ' with an account, plus those without' : ''}), ${twice} more than once: ${exact ? 'exactly once' : 'NOT exactly once'}`;
          } else {
            // Rounds alternate msgflow and its peer (each in a fresh project), so both meet the same load; medians.
            const ours: ChildResult[] = [];
            const peers: ChildResult[] = [];
            for (let round = 0; round < rounds; round++) {
              const fresh = round === 0 ? dir : await makeProject(n, driver, { prefix: `${prefix}${round}:` });
              try {
                ours.push(await childResult(runChild(fresh, job, timeoutS), timeoutS));
              } finally {
                if (fresh !== dir) await rm(fresh, { recursive: true, force: true });
              }
              if (!values['no-peer']) {
                const peerDir = await makeProject(n, driver, { prefix: `${prefix}peer:` });
                try {
                  peers.push(await childResult(runChild(peerDir, job, timeoutS, n), timeoutS));
                } finally {
                  await rm(peerDir, { recursive: true, force: true });
                }
              }
            }
            ours.sort((a, b) => a.runMs - b.runMs);
            result = ours[Math.floor(ours.length / 2)]!;
            rss = Math.max(...ours.map((r) => r.maxRssMB));
            if (result.liveHeapMB !== undefined) row.note = `live after GC: heap ${result.liveHeapMB} MB, external ${result.externalMB} MB`;
            runMs = result.runMs;
            const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
            const ourCpu = median(ours.map((r) => r.cpuMs));
            row.cpu = `${((ourCpu * 1000) / n).toFixed(1)}`;
            if (peers.length > 0) {
              const peerMs = median(peers.map((r) => r.runMs));
              row.peer = `${Math.round((n / peerMs) * 1000).toLocaleString('en')} (${(peerMs / runMs).toFixed(2)}×)`;
              const peerCpu = median(peers.map((r) => r.cpuMs));
              row.cpu += ` / ${((peerCpu * 1000) / n).toFixed(1)} (${(peerCpu / ourCpu).toFixed(2)}×)`;
            }
          }
          // After a kill, the resumed run did only part of the work: its rate would mislead.
          row.perSec = service ? '-' : Math.round((n / runMs) * 1000).toLocaleString('en');
          row.wall = service ? `${fmtWall(runMs)} (resumed run)` : fmtWall(runMs);
          row.rss = `${rss} MB`;
          const bytes = driver === 'lowdb' ? await dirBytes(join(dir, '.msgflow', 'state')) : await redisBytes(prefix, !values.keep);
          row.bytes = `${Math.round(bytes / n)}${driver === 'redis' ? ' (MEMORY USAGE)' : ''}`;
          if (result.status !== 'succeeded') {
            failed = true;
            row.note = `${row.note ? `${row.note}; ` : ''}run ${result.status}${result.error ? `: ${result.error}` : ''}`;
          }
        } catch (e) {
          failed = true;
          row.note = `error: ${(e as Error).message.split('\n').slice(0, 3).join(' ')}`;
          if (driver === 'redis') await redisBytes(prefix, !values.keep).catch(() => 0);
        } finally {
          await service?.close();
          if (values.keep) row.note = `${row.note ? `${row.note}; ` : ''}kept ${dir}`;
          else await rm(dir, { recursive: true, force: true });
        }
        rows.push(row);
        console.log(`  done: ${row.job} ${row.driver} ${row.records}: ${row.perSec} records/s ${row.note}`);
      }
    }
  }
  console.log('');
  printTable(rows);
  process.exitCode = failed ? 1 : 0;
}

const childArg = process.argv.indexOf('--child');
if (childArg !== -1) await child(JSON.parse(process.argv[childArg + 1]) as ChildArgs);
else await parent();
