/**
 * `msgflow run` over HTTP against `msgflow serve`, next to the script a user
 * would write instead (run by hand, not a test):
 *
 *   npm run build && node --import tsx bench/http-run.ts
 *
 * One run, BENCH_ROUNDS (3) interleaved rounds, medians; every process is
 * spawned fresh and timed from spawn to exit (start-up included on both sides):
 * 1. `msgflow run` of a checkAccount.bulk flow over BENCH_RECORDS (20,000)
 *    numbers (lowdb store, report, journal and resume as a user gets them)
 *    against the hand-written `fetch` script below at concurrency 8 and 1,
 *    all against the same `msgflow serve` (limits off, population share 0.6,
 *    fresh numbers for every contestant so no one is answered from a cache);
 * 2. the client's HTTP transport alone (createHttpTransport, row `msgflow`),
 *    BENCH_CALLS (5,000) checkAccount calls at concurrency 1 and 8, against
 *    got tuned (constants merged once with got.extend, a LIFO keep-alive
 *    agent; the transport before undici), undici's request() on a
 *    keep-alive Agent, the platform's fetch and a bare node:http request on
 *    a keep-alive agent: what the transport layer costs.
 */
import { spawn } from 'node:child_process';
import http from 'node:http';
import { createWriteStream } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import got from 'got';
import { Agent as UndiciAgent, request as undiciRequest } from 'undici';
import { API_METHODS } from '../src/api/methods.js';
import { createHttpTransport } from '../src/client/http-transport.js';

const SELF = fileURLToPath(import.meta.url);
const BIN = path.join(path.dirname(SELF), '..', 'bin', 'msgflow.js');
const ID = '1101000888';
const TOKEN = 'bench-token-77a1';
const RECORDS = Number(process.env.BENCH_RECORDS ?? 20_000);
const CALLS = Number(process.env.BENCH_CALLS ?? 5_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

/** The script a user would write: read the numbers, POST checkAccount for each, N at a time, write the answers. */
const FETCH_SCRIPT = `
import { readFileSync, writeFileSync } from 'node:fs';
const [, , base, file, out, conc] = process.argv;
const numbers = readFileSync(file, 'utf8').split('\\n').slice(1).filter(Boolean);
const rows = new Array(numbers.length);
let next = 0;
async function worker() {
  while (next < numbers.length) {
    const i = next++;
    const res = await fetch(base + '/checkAccount/${TOKEN}', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ phoneNumber: Number(numbers[i]) }),
    });
    const body = await res.json();
    if (res.status !== 200) throw new Error('HTTP ' + res.status);
    rows[i] = numbers[i] + ',' + body.existsWhatsapp;
  }
}
await Promise.all(Array.from({ length: Number(conc) }, worker));
writeFileSync(out, 'phone,exists\\n' + rows.join('\\n') + '\\n');
`;

const fmt = (n: number, d = 0) => n.toLocaleString('en', { maximumFractionDigits: d, minimumFractionDigits: d });
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function writeNumbers(file: string, first: number, n: number): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  const out = createWriteStream(file);
  out.write('phone\n');
  for (let i = 0; i < n; i++) if (!out.write(`${first + i}\n`)) await new Promise<void>((r) => out.once('drain', () => r()));
  await new Promise<void>((resolve, reject) => out.end((e?: Error | null) => (e ? reject(e) : resolve())));
}

function spawnServe(config: string): Promise<{ stop: () => void; port: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, 'serve', '--config', config, '--port', '0'], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      const m = /listening on http:\/\/[^:]+:(\d+)/.exec(out);
      if (m) resolve({ port: Number(m[1]), stop: () => child.kill('SIGKILL') });
    });
    child.on('exit', (code) => reject(new Error(`msgflow serve exited with ${code}`)));
  });
}

/** Seconds from spawn to a clean exit. */
function timed(args: string[], cwd: string): Promise<number> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd, stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, NO_COLOR: '1' } });
    let err = '';
    child.stderr!.on('data', (c: Buffer) => (err = (err + c.toString()).slice(-4000)));
    child.on('exit', (code) =>
      code === 0 ? resolve((performance.now() - t0) / 1000) : reject(new Error(`${args.join(' ')}: exit ${code}\n${err}`)),
    );
  });
}

/** A project whose default instance is the serve at `port`, with a checkAccount.bulk flow over `n` numbers from `first`. */
async function runProject(root: string, name: string, port: number, first: number): Promise<string> {
  const dir = path.join(root, name);
  await mkdir(path.join(dir, 'flows'), { recursive: true });
  await writeFile(
    path.join(dir, 'config.yaml'),
    `instances:\n  default:\n    apiUrl: http://127.0.0.1:${port}\n    idInstance: "${ID}"\n    apiTokenInstance: ${TOKEN}\n    rateLimit: false\nstore: { driver: lowdb }\n`,
  );
  await writeFile(
    path.join(dir, 'flows', 'check.yaml'),
    'name: check\nsteps:\n  - id: check\n    uses: checkAccount.bulk\n    with: { file: data/numbers.csv, pace: { delay: 0, jitter: 0 }, report: reports/check.csv }\n',
  );
  await writeNumbers(path.join(dir, 'data', 'numbers.csv'), first, RECORDS);
  return dir;
}

/** `calls` checkAccount calls, `conc` at a time, through `call`; calls/s. */
async function loop(conc: number, calls: number, call: (phone: number) => Promise<number>, first: number): Promise<number> {
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: conc }, async () => {
      while (next < calls) {
        const status = await call(first + next++);
        if (status !== 200) throw new Error(`HTTP ${status}`);
      }
    }),
  );
  return calls / ((performance.now() - t0) / 1000);
}

function transports(port: number) {
  const base = `http://127.0.0.1:${port}/waInstance${ID}`;
  const client = createHttpTransport({ apiUrl: `http://127.0.0.1:${port}`, idInstance: ID, apiTokenInstance: TOKEN });
  const agent = new http.Agent({ keepAlive: true });
  const bare = (phone: number) =>
    new Promise<number>((resolve, reject) => {
      const body = JSON.stringify({ phoneNumber: phone });
      const req = http.request(
        `${base}/checkAccount/${TOKEN}`,
        { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => (JSON.parse(Buffer.concat(chunks).toString()), resolve(res.statusCode ?? 0)));
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  // got with every per-call constant merged once (got.extend) and a LIFO keep-alive agent: the tuned variant.
  const tunedAgent = new http.Agent({ keepAlive: true, scheduling: 'lifo' });
  const tuned = got.extend({
    method: 'POST',
    headers: { accept: 'application/json', 'user-agent': 'msgflow' },
    retry: { limit: 0 },
    throwHttpErrors: false,
    followRedirect: false,
    responseType: 'text',
    agent: { http: tunedAgent },
  });
  const dispatcher = new UndiciAgent({ keepAliveTimeout: 10_000 });
  return {
    'got tuned': async (phone: number) => {
      const res = await tuned(`${base}/checkAccount/${TOKEN}`, { json: { phoneNumber: phone }, timeout: { request: 30_000 } });
      JSON.parse(res.body);
      return res.statusCode;
    },
    undici: async (phone: number) => {
      const res = await undiciRequest(`${base}/checkAccount/${TOKEN}`, {
        method: 'POST',
        dispatcher,
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify({ phoneNumber: phone }),
        headersTimeout: 30_000,
        bodyTimeout: 30_000,
      });
      await res.body.json();
      return res.statusCode;
    },
    client: async (phone: number) =>
      (await client.request({ method: 'checkAccount', httpMethod: 'POST', body: { phoneNumber: phone }, timeoutMs: 30_000 })).statusCode,
    fetch: async (phone: number) => {
      const res = await fetch(`${base}/checkAccount/${TOKEN}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ phoneNumber: phone }),
      });
      await res.json();
      return res.status;
    },
    bare,
    close: async () => {
      await client.close?.();
      agent.destroy();
      tunedAgent.destroy();
      await dispatcher.close();
    },
  };
}

async function main() {
  const root = await mkdtemp(path.join(tmpdir(), 'msgflow-bench-httprun-'));
  const limits = API_METHODS.map((m) => `${m}: 0`).join(', ');
  const serveConfig = path.join(root, 'serve.yaml');
  await writeFile(
    serveConfig,
    `local:\n  port: 0\n  dataDir: serve-data\n  network:\n    deliveredAfterMs: 0\n    population: [{ prefix: "792", share: 0.6 }]\n  instances:\n    - idInstance: "${ID}"\n      apiTokenInstance: ${TOKEN}\n      rateLimits: { ${limits} }\n      checkAccountLimit: { numbers: 1000000000, windowMinutes: 1 }\n`,
  );
  await writeFile(path.join(root, 'fetch-script.mjs'), FETCH_SCRIPT);
  const serve = await spawnServe(serveConfig);
  console.log(
    `msgflow run over HTTP vs a hand-written fetch script (node ${process.version}; ${ROUNDS} rounds; ${fmt(RECORDS)} records; same msgflow serve)\n`,
  );
  let block = 0;
  const fresh = () => 79_200_000_000 + block++ * 1_000_000;
  const rows: { run: number; f8: number; f1: number }[] = [];
  const tRows: Record<string, number>[] = [];
  try {
    const t = transports(serve.port);
    const contenders = { msgflow: t.client, 'got tuned': t['got tuned'], undici: t.undici, fetch: t.fetch, 'node:http': t.bare };
    for (const call of Object.values(contenders)) await loop(8, 500, call, fresh()); // warm-up
    for (let r = 0; r < ROUNDS; r++) {
      const dir = await runProject(root, `run-${r}`, serve.port, fresh());
      const runS = await timed([BIN, 'run', 'check', '--config', path.join(dir, 'config.yaml')], dir);
      const script = async (conc: number) => {
        const file = path.join(root, `numbers-${r}-${conc}.csv`);
        await writeNumbers(file, fresh(), RECORDS);
        const base = `http://127.0.0.1:${serve.port}/waInstance${ID}`;
        return timed([path.join(root, 'fetch-script.mjs'), base, file, `${file}.out`, String(conc)], root);
      };
      const f8 = await script(8);
      const f1 = await script(1);
      rows.push({ run: RECORDS / runS, f8: RECORDS / f8, f1: RECORDS / f1 });
      const row: Record<string, number> = {};
      for (const conc of [1, 8]) {
        for (const [name, call] of Object.entries(contenders)) row[`${name} c${conc}`] = await loop(conc, CALLS, call, fresh());
      }
      tRows.push(row);
    }
    await t.close();
  } finally {
    serve.stop();
    await rm(root, { recursive: true, force: true });
  }
  console.log('1. Records/s, spawn to exit (start-up included)');
  rows.forEach((x, k) =>
    console.log(
      `   round ${k + 1}: msgflow run ${fmt(x.run)}; fetch script c8 ${fmt(x.f8)} (ratio ${fmt(x.run / x.f8, 2)}); c1 ${fmt(x.f1)} (ratio ${fmt(x.run / x.f1, 2)})`,
    ),
  );
  console.log(
    `   median: msgflow run ${fmt(median(rows.map((x) => x.run)))} rec/s; ratio to the fetch script at c8 ${fmt(median(rows.map((x) => x.run / x.f8)), 2)} (target >= 1.2), at c1 ${fmt(median(rows.map((x) => x.run / x.f1)), 2)}\n`,
  );
  console.log(`2. The transport alone: checkAccount calls/s, ${fmt(CALLS)} calls per cell`);
  for (const key of Object.keys(tRows[0]!)) {
    console.log(
      `   ${key.padEnd(16)} ${tRows.map((x) => fmt(x[key]!).padStart(7)).join(' ')}   median ${fmt(median(tRows.map((x) => x[key]!)))}`,
    );
  }
}

await main();
