/**
 * Benchmark of the local service (run by hand, not a test):
 *
 *   npm run build && node --import tsx bench/local-bench.ts
 *
 * Prints, from one run:
 * 1. requests/second under autocannon -c 50 (load generator in this process,
 *    servers in children) of getMessage and of checkAccount (cached) as a
 *    ratio to a bare node:http server sent the same request and answering it
 *    with the same bytes msgflow answered (target >= 0.6), with fastify's
 *    hello world measured alongside as the peer; and each server's CPU time
 *    per request (from /proc), which a busy shared machine moves less than
 *    requests/second;
 * 2. getChatHistory (count 100) p99 latency and sendFileByUrl acknowledgement
 *    p99 latency with 100 and with 100,000 stored messages, as a ratio
 *    (target: the larger store at most 2x slower);
 * 3. send-queue release jitter against sendIntervalMs (target p99 < 20 ms).
 *
 * Servers run in child processes so the load generator does not share their
 * event loop; rate limits are 0 (unlimited).
 *
 * Large-data mode:
 *
 *   npm run build && node --import tsx bench/local-bench.ts --large
 *
 * generates 1,000,000 checked numbers (checks.jsonl) and 1,000,000 contacts
 * (contacts.jsonl, contact list and phonebook) in the service's own file
 * format, starts the real `msgflow serve` (bin/msgflow.js, built dist/) on
 * them, and prints: the start time (spawn to "listening", target <= 5 s), the
 * server's RSS once started, and getMessage / checkAccount (cached, a number
 * among the million) requests/s under `autocannon -c 50` as ratios to a bare
 * node:http server measured in the same run on the same requests (target
 * >= 0.6), with the CPU per request of both. BENCH_LARGE_RECORDS changes the
 * 1,000,000.
 *
 * Bulk mode:
 *
 *   node --import tsx bench/local-bench.ts --bulk
 *
 * calls checkAccount for BENCH_LARGE_RECORDS new numbers, then addContact for
 * as many (population share 0.6 on both ranges), one at a time through
 * service.handle in this process (as `apiUrl: local` does), and prints
 * records/s for the first and last 10 % (flat cost: the ratio stays near 1),
 * peak RSS, and bytes on disk per record.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import { createWriteStream, readFileSync } from 'node:fs';
import { once as once_ } from 'node:events';
import { mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import autocannon from 'autocannon';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { LocalSchema } from '../src/local/config.js';
import { API_METHODS } from '../src/api/methods.js';
import { History, type StoredMessage } from '../src/local/instance/history.js';
import { createLocalService } from '../src/local/service.js';

const SELF = fileURLToPath(import.meta.url);
const BUILT_SERVICE = new URL('../dist/local/service.js', import.meta.url).href;
const ID = '1101000001';
const TOKEN = 'bench-token-123';
const CHAT = '79001112233@c.us';
const DURATION_MS = Number(process.env.BENCH_DURATION_MS ?? 3000);
const LATENCY_SAMPLES = Number(process.env.BENCH_SAMPLES ?? 3000);

function localConfig(dataDir: string, sendIntervalMs: number) {
  return LocalSchema.parse({
    port: 0,
    dataDir,
    network: { accounts: [{ phone: 79001112233, username: '@alice', name: 'Alice' }], deliveredAfterMs: 1000, readAfterMs: 5000 },
    // The jitter run's files come from a loopback server of this bench.
    fetch: { allowPrivate: true },
    instances: [
      {
        idInstance: ID,
        apiTokenInstance: TOKEN,
        sendIntervalMs,
        rateLimits: Object.fromEntries(API_METHODS.map((m) => [m, 0])),
        checkAccountLimit: { numbers: 1_000_000, windowMinutes: 10, retryAfterSeconds: 7200 },
      },
    ],
  });
}

// ---------------------------------------------------------------- child modes
async function childMain(mode: string, arg: string) {
  if (mode === 'bare') {
    // The peer: node:http answering each path with the very bytes msgflow
    // answered for the same request (measured in the same run), so both send
    // the same body; the request body is read to its end like msgflow's.
    const bodies = JSON.parse(arg || '{}') as Record<string, string>;
    const server = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        const body = bodies[req.url ?? '/'] ?? '{}';
        res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) }).end(body);
      });
    });
    server.keepAliveTimeout = 5000;
    server.listen(0, '127.0.0.1', () => console.log(`PORT ${(server.address() as { port: number }).port}`));
    return;
  }
  if (mode === 'fastify') {
    // The peer the issue names: fastify's hello world, as its README shows it.
    const { default: Fastify } = await import('fastify');
    const app = Fastify({ logger: false });
    app.get('/', () => ({ hello: 'world' }));
    await app.listen({ port: 0, host: '127.0.0.1' });
    console.log(`PORT ${(app.server.address() as { port: number }).port}`);
    return;
  }
  if (mode === 'service') {
    // The built service (dist/), as `msgflow serve` runs it, not the source through tsx's transform.
    const built = (await import(BUILT_SERVICE)) as typeof import('../src/local/service.js');
    const service = built.createLocalService(localConfig(arg, 3_600_000), { baseDir: '/' });
    await service.start();
    const l = await service.listen(0, '127.0.0.1');
    console.log(`PORT ${l.port}`);
    return;
  }
  if (mode === 'restart') {
    const t = performance.now();
    const service = createLocalService(localConfig(arg, 3_600_000), { baseDir: '/' });
    await service.start();
    const ms = performance.now() - t;
    console.log(
      `restart with all of it stored (fresh process): ${(ms / 1000).toFixed(2)} s, RSS ${(process.memoryUsage().rss / 1048576).toFixed(0)} MB`,
    );
    await service.close();
    return;
  }
  if (mode === 'jitter') {
    const files = http.createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/pdf' }).end('%PDF-1.4\n%%EOF\n'));
    await new Promise<void>((r) => files.listen(0, '127.0.0.1', r));
    const fileUrl = `http://127.0.0.1:${(files.address() as { port: number }).port}/a.pdf`;
    const interval = 500;
    const count = Number(process.env.BENCH_JITTER_COUNT ?? 30);
    const service = createLocalService(localConfig(arg, interval), { baseDir: '/' });
    await service.start();
    const at: number[] = [];
    const wall: number[] = [];
    service.events.on('queue:released', (e) => {
      at.push(performance.now());
      wall.push(e.releasedAt - e.dueAt);
    });
    const done = new Promise<void>((resolve, reject) => {
      service.events.on('queue:sent', () => at.length >= count && resolve());
      // A send that fails would leave the wait open forever: say why instead.
      service.events.on('queue:failed', (e) => reject(new Error(`a queued send failed: ${e.reason}`)));
    });
    for (let i = 0; i < count; i++) {
      await service.handle({
        httpMethod: 'POST',
        path: `/waInstance${ID}/sendFileByUrl/${TOKEN}`,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ chatId: CHAT, urlFile: fileUrl, fileName: `f${i}.pdf` }),
      });
    }
    await done;
    // Jitter against the ideal grid first + k * interval, measured with the monotonic clock.
    const jitter = at.map((t, k) => Math.abs(t - (at[0]! + k * interval)));
    console.log(`RESULT ${JSON.stringify({ interval, count, jitter, wall })}`);
    await service.close();
    files.close();
    return;
  }
}

// ---------------------------------------------------------------- parent side
function startChild(mode: string, arg = ''): Promise<{ child: ChildProcess; port: number; result: Promise<string> }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', SELF, '--child', mode, arg], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    let resolveResult!: (s: string) => void;
    const result = new Promise<string>((r) => (resolveResult = r));
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      const port = /PORT (\d+)/.exec(out);
      if (port) resolve({ child, port: Number(port[1]), result });
      const res = /RESULT (.*)\n/.exec(out);
      if (res) resolveResult(res[1]!);
    });
    child.on('error', reject);
    if (mode === 'jitter') resolve({ child, port: 0, result });
  });
}

function stop(child: ChildProcess): Promise<void> {
  return new Promise((r) => {
    child.once('exit', () => r());
    child.kill('SIGKILL');
  });
}

interface Req {
  method: 'GET' | 'POST';
  path: string;
  body?: string;
}

function once(agent: http.Agent, port: number, r: Req): Promise<number> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | number> = {};
    if (r.body !== undefined) {
      headers['content-type'] = 'application/json';
      headers['content-length'] = Buffer.byteLength(r.body);
    }
    const req = http.request({ host: '127.0.0.1', port, method: r.method, path: r.path, agent, headers }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end(r.body);
  });
}

async function latencies(port: number, make: (i: number) => Req, n: number): Promise<number[]> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const out: number[] = [];
  for (let i = 0; i < n + 5; i++) {
    const t = performance.now();
    const s = await once(agent, port, make(i));
    if (s !== 200) throw new Error(`HTTP ${s}`);
    if (i >= 5) out.push(performance.now() - t); // the first few open the socket
  }
  agent.destroy();
  return out;
}

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]!;
}

/** Writes `count` messages into one chat through the service's own storage code. */
async function prepareStore(dataDir: string, count: number): Promise<string> {
  const history = new History(path.join(dataDir, ID), { statusOf: () => 'read', phonebookName: () => '' });
  const start = Date.now() - count * 1000;
  let firstId = '';
  for (let i = 0; i < count; i += 5000) {
    const batch: StoredMessage[] = [];
    for (let j = i; j < Math.min(count, i + 5000); j++) {
      const idMessage = j.toString(16).toUpperCase().padStart(32, '0');
      if (!firstId) firstId = idMessage;
      batch.push({
        sentAtMs: start + j * 1000,
        message: {
          type: j % 2 ? 'outgoing' : 'incoming',
          idMessage,
          timestamp: Math.floor((start + j * 1000) / 1000),
          typeMessage: 'textMessage',
          chatId: CHAT,
          chatType: 'user',
          textMessage: `message ${j}`,
          isForwarded: false,
          forwardingScore: 0,
          deletedMessageId: '',
          editedMessageId: '',
          isEdited: false,
          isDeleted: false,
          ...(j % 2 ? { sendByApi: true } : { senderId: CHAT, senderName: 'Alice', senderType: 'user' as const }),
        },
      });
    }
    await history.append(...batch);
  }
  return firstId;
}

const p = (method: string) => `/waInstance${ID}/${method}/${TOKEN}`;
const fmt = (n: number, d = 2) => n.toFixed(d);

async function startStore(stored: number) {
  const dir = await mkdtemp(path.join(tmpdir(), `msgflow-bench-${stored}-`));
  const t = performance.now();
  const firstId = await prepareStore(dir, stored);
  const prepMs = performance.now() - t;
  const started = performance.now();
  const { child, port } = await startChild('service', dir);
  return { dir, child, port, firstId, prepMs, startMs: performance.now() - started };
}

const median = (xs: number[]) => pct(xs, 50);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

async function main() {
  console.log(
    `msgflow local service benchmark (node ${process.version}; ${ROUNDS} interleaved rounds; autocannon -c ${CANNON_CONNECTIONS}, ${cannonSeconds()} s per throughput run)`,
  );
  console.log('Servers run in child processes; every figure is compared with its baseline measured in the same round.\n');
  const fast = await startChild('fastify');
  const small = await startStore(100);
  const large = await startStore(100_000);
  const getMessage: Req = { method: 'POST', path: p('getMessage'), body: JSON.stringify({ chatId: CHAT, idMessage: small.firstId }) };
  const check: Req = { method: 'POST', path: p('checkAccount'), body: JSON.stringify({ phoneNumber: 79001112233 }) };
  await once(new http.Agent(), small.port, check); // fills the cache
  const bare = await startChild('bare', JSON.stringify(await answersOf(small.port, [getMessage, check])));
  const srv = { bare: target(bare), fastify: target(fast), small: target(small) };

  const rows: ThroughputRound[] = [];
  const hist = { small: [] as number[], large: [] as number[] };
  const acks = { small: [] as number[], large: [] as number[] };
  let seq = 0;
  const historyReq = (): Req => ({ method: 'POST', path: p('getChatHistory'), body: JSON.stringify({ chatId: CHAT, count: 100 }) });
  const ackReq = (): Req => ({
    method: 'POST',
    path: p('sendFileByUrl'),
    body: JSON.stringify({ chatId: CHAT, urlFile: 'http://127.0.0.1:9/never-fetched.pdf', fileName: `f${seq++}.pdf` }),
  });
  for (const port of [small.port, large.port]) {
    await latencies(port, historyReq, 300); // warm-up, discarded
    await latencies(port, ackReq, 300);
  }
  // Warm-up (JIT, sockets), discarded.
  for (const r of [getMessage, check]) for (const t of [srv.bare, srv.small]) await cannon(t, r);
  await cannon(srv.fastify, FASTIFY_HELLO);
  const per = Math.ceil(LATENCY_SAMPLES / ROUNDS / 50) * 50;
  for (let r = 0; r < ROUNDS; r++) {
    rows.push(await throughputRound(srv, getMessage, check));
    // Small blocks, alternated, so both stores see the same background noise of a shared machine.
    for (let b = 0; b < per; b += 50) {
      hist.small.push(...(await latencies(small.port, historyReq, 50)));
      hist.large.push(...(await latencies(large.port, historyReq, 50)));
      acks.small.push(...(await latencies(small.port, ackReq, 50)));
      acks.large.push(...(await latencies(large.port, ackReq, 50)));
    }
  }
  await Promise.all([stop(bare.child), stop(fast.child), stop(small.child), stop(large.child)]);
  await rm(small.dir, { recursive: true, force: true });
  await rm(large.dir, { recursive: true, force: true });
  printThroughput(rows);

  const h100 = pct(hist.small, 99);
  const h100k = pct(hist.large, 99);
  const a100 = pct(acks.small, 99);
  const a100k = pct(acks.large, 99);
  console.log(`2. Latency, ${per * ROUNDS} sequential requests per row (p50 / p99 ms)`);
  console.log(`   getChatHistory count 100, 100 stored       ${fmt(pct(hist.small, 50))} / ${fmt(h100)}`);
  console.log(
    `   getChatHistory count 100, 100,000 stored   ${fmt(pct(hist.large, 50))} / ${fmt(h100k)}   p99 ratio ${fmt(h100k / h100)} (target <= 2)`,
  );
  console.log(`   sendFileByUrl ack, 100 stored              ${fmt(pct(acks.small, 50))} / ${fmt(a100)}`);
  console.log(
    `   sendFileByUrl ack, 100,000 stored          ${fmt(pct(acks.large, 50))} / ${fmt(a100k)}   p99 ratio ${fmt(a100k / a100)} (target <= 2)`,
  );
  console.log(`   (writing 100,000 messages: ${fmt(large.prepMs, 0)} ms; service start with them: ${fmt(large.startMs, 0)} ms)\n`);

  const jdir = await mkdtemp(path.join(tmpdir(), 'msgflow-bench-jitter-'));
  const j = await startChild('jitter', jdir);
  const res = JSON.parse(await j.result) as { interval: number; count: number; jitter: number[]; wall: number[] };
  await stop(j.child);
  await rm(jdir, { recursive: true, force: true });
  console.log(`3. Send-queue release jitter, sendIntervalMs ${res.interval}, ${res.count} messages`);
  console.log(
    `   |release - (first + k*interval)|  p50 ${fmt(pct(res.jitter, 50))} ms, p99 ${fmt(pct(res.jitter, 99))} ms, max ${fmt(Math.max(...res.jitter))} ms  (target p99 < 20 ms)`,
  );
  console.log(`   releasedAt - dueAt (Clock, ms)    p50 ${pct(res.wall, 50)}, p99 ${pct(res.wall, 99)}, max ${Math.max(...res.wall)}`);
}

// ---------------------------------------------------------------- large data
const LARGE = Number(process.env.BENCH_LARGE_RECORDS ?? 1_000_000);
const CHECKED_BASE = 79_200_000_000;
const CONTACT_BASE = 79_300_000_000;

/** Writes `lines(i)` for i < count into `file`, in 1 MB slices. */
async function writeLines(file: string, count: number, line: (i: number) => string): Promise<void> {
  const out = createWriteStream(file);
  let chunk: string[] = [];
  let len = 0;
  for (let i = 0; i < count; i++) {
    const l = line(i);
    chunk.push(l);
    len += l.length;
    if (len > 1 << 20) {
      if (!out.write(chunk.join(''))) await once_(out, 'drain');
      chunk = [];
      len = 0;
    }
  }
  out.end(chunk.join(''));
  await once_(out, 'finish');
}

function spawnServe(config: string): Promise<{ child: ChildProcess; port: number; startMs: number }> {
  const bin = path.join(path.dirname(SELF), '..', 'bin', 'msgflow.js');
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, 'serve', '--config', config, '--port', '0'], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      const m = /listening on http:\/\/[^:]+:(\d+)/.exec(out);
      if (m) resolve({ child, port: Number(m[1]), startMs: performance.now() - t0 });
    });
    child.on('exit', (code) => reject(new Error(`msgflow serve exited with ${code}`)));
  });
}

function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

const CANNON_CONNECTIONS = 50;
const cannonSeconds = () => Math.max(1, Math.round(DURATION_MS / 1000));

/** A server under load: its port, and its process (for the CPU it spends). */
interface Target {
  port: number;
  pid: number;
}

const target = (c: { child: ChildProcess; port: number }): Target => ({ port: c.port, pid: c.child.pid! });

/** CPU time (user + system) a process has used so far, ms (from /proc: 10 ms ticks). */
function cpuMs(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(f[11]) + Number(f[12])) * 10;
}

/** One autocannon run: requests/second, and the server's CPU per request (µs). */
interface Load {
  rps: number;
  cpuUs: number;
}

/**
 * Requests/second of `r` under autocannon (in this process; the server runs
 * in a child), and the server's CPU time per request over the run: on a
 * shared machine the second moves less than the first with what else runs.
 */
async function cannon(t: Target, r: Req): Promise<Load> {
  const cpu0 = cpuMs(t.pid);
  const result = await autocannon({
    url: `http://127.0.0.1:${t.port}${r.path}`,
    method: r.method,
    body: r.body,
    headers: r.body ? { 'content-type': 'application/json' } : {},
    connections: CANNON_CONNECTIONS,
    duration: cannonSeconds(),
  });
  if (result.non2xx > 0 || result.errors > 0) throw new Error(`${r.path}: ${result.non2xx} non-2xx answers, ${result.errors} errors`);
  return { rps: result.requests.average, cpuUs: ((cpuMs(t.pid) - cpu0) * 1000) / Math.max(1, result.requests.total) };
}

const FASTIFY_HELLO: Req = { method: 'GET', path: '/' };

/** The bodies msgflow answers to `reqs`, by path: what the bare peer then answers. */
async function answersOf(port: number, reqs: Req[]): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const r of reqs) {
    const res = await fetch(`http://127.0.0.1:${port}${r.path}`, {
      method: r.method,
      headers: { 'content-type': 'application/json' },
      body: r.body,
    });
    if (res.status !== 200) throw new Error(`${r.path}: HTTP ${res.status}`);
    out[r.path] = await res.text();
  }
  return out;
}

interface ThroughputRound {
  bareGm: Load;
  gm: Load;
  bareCa: Load;
  ca: Load;
  fastify: Load;
}

const meanLoad = (a: Load, b: Load): Load => ({ rps: (a.rps + b.rps) / 2, cpuUs: (a.cpuUs + b.cpuUs) / 2 });

/**
 * One round: each msgflow method between two runs of the bare peer on the
 * same request (before and after, so a drift of the shared machine shows in
 * its baseline), and fastify's hello world in the middle.
 */
async function throughputRound(srv: { bare: Target; fastify: Target; small: Target }, gmReq: Req, caReq: Req): Promise<ThroughputRound> {
  const b1 = await cannon(srv.bare, gmReq);
  const gm = await cannon(srv.small, gmReq);
  const c1 = await cannon(srv.bare, caReq);
  const ca = await cannon(srv.small, caReq);
  const fastify = await cannon(srv.fastify, FASTIFY_HELLO);
  const c2 = await cannon(srv.bare, caReq);
  const b2 = await cannon(srv.bare, gmReq);
  return { bareGm: meanLoad(b1, b2), gm, bareCa: meanLoad(c1, c2), ca, fastify };
}

function printThroughput(rows: ThroughputRound[]): void {
  const r = (x: Load, base: Load) => `${fmt(x.rps, 0)} req/s (${fmt(x.rps / base.rps)}), ${fmt(x.cpuUs, 1)} µs CPU/req`;
  console.log(
    `1. Throughput (autocannon -c ${CANNON_CONNECTIONS}, ${cannonSeconds()} s per run; bare node:http answers the same request with the same bytes, mean of the runs before and after)`,
  );
  rows.forEach((x, k) => {
    console.log(
      `   round ${k + 1}: getMessage: bare ${fmt(x.bareGm.rps, 0)} req/s, ${fmt(x.bareGm.cpuUs, 1)} µs CPU/req; msgflow ${r(x.gm, x.bareGm)}`,
    );
    console.log(
      `            checkAccount (cached): bare ${fmt(x.bareCa.rps, 0)} req/s, ${fmt(x.bareCa.cpuUs, 1)} µs CPU/req; msgflow ${r(x.ca, x.bareCa)}; fastify hello ${r(x.fastify, x.bareCa)}`,
    );
  });
  const m = (f: (x: ThroughputRound) => number) => fmt(median(rows.map(f)));
  console.log(
    `   median ratio to bare node:http, requests/s: getMessage ${m((x) => x.gm.rps / x.bareGm.rps)}, checkAccount (cached) ${m((x) => x.ca.rps / x.bareCa.rps)}  (target >= 0.6); fastify hello world ${m((x) => x.fastify.rps / x.bareCa.rps)}`,
  );
  console.log(
    `   median ratio of server CPU per request, bare / msgflow: getMessage ${m((x) => x.bareGm.cpuUs / x.gm.cpuUs)}, checkAccount (cached) ${m((x) => x.bareCa.cpuUs / x.ca.cpuUs)}; fastify hello world ${m((x) => x.bareCa.cpuUs / x.fastify.cpuUs)}\n`,
  );
}

async function large() {
  const dir = await mkdtemp(path.join(tmpdir(), 'msgflow-bench-large-'));
  const data = path.join(dir, 'data', ID);
  await mkdir(data, { recursive: true });
  const t = Date.now();
  const g0 = performance.now();
  // The service's own line formats (src/local/instance/account-check.ts and contacts.ts): 60 % of the numbers have an account.
  await writeLines(path.join(data, 'checks.jsonl'), LARGE + 1, (i) =>
    i === 0 ? `{"k":"#","w":${t}}\n` : `{"k":${CHECKED_BASE + i},"${i % 5 < 3 ? 't' : 'n'}":${t + i}}\n`,
  );
  await writeLines(
    path.join(data, 'contacts.jsonl'),
    LARGE,
    (i) => `{"k":${CONTACT_BASE + i},"cp":{"f":"Name${i}","l":"Surname","u":${t + i}}}\n`,
  );
  const firstId = await prepareStore(path.join(dir, 'data'), 100);
  const config = path.join(dir, 'config.yaml');
  await writeFile(
    config,
    [
      'local:',
      '  port: 0',
      '  dataDir: data',
      '  network:',
      '    accounts: [{ phone: 79001112233, username: "@alice", name: Alice }]',
      '  instances:',
      `    - idInstance: "${ID}"`,
      `      apiTokenInstance: "${TOKEN}"`,
      `      rateLimits: { ${API_METHODS.map((m) => `${m}: 0`).join(', ')} }`,
      '      checkAccountLimit: { numbers: 100000000, windowMinutes: 10, retryAfterSeconds: 7200 }',
      '',
    ].join('\n'),
  );
  console.log(
    `msgflow local service, large data: ${LARGE.toLocaleString('en')} checked numbers and ${LARGE.toLocaleString('en')} contacts (node ${process.version})`,
  );
  console.log(`   generated in ${fmt((performance.now() - g0) / 1000, 1)} s`);
  const serve = await spawnServe(config);
  const rss = rssMb(serve.child.pid!);
  const cachedNumber = CHECKED_BASE + 123_457; // i % 5 = 2: has an account
  const check: Req = { method: 'POST', path: p('checkAccount'), body: JSON.stringify({ phoneNumber: cachedNumber }) };
  const getMessage: Req = { method: 'POST', path: p('getMessage'), body: JSON.stringify({ chatId: CHAT, idMessage: firstId }) };
  const probe = await fetch(`http://127.0.0.1:${serve.port}${check.path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: check.body,
  });
  const answer = (await probe.json()) as { fromCache?: boolean };
  if (answer.fromCache !== true)
    throw new Error(`checkAccount of a stored number was not answered from the cache: ${JSON.stringify(answer)}`);
  const bare = await startChild('bare', JSON.stringify(await answersOf(serve.port, [getMessage, check])));
  const srv = { bare: target(bare), serve: target(serve) };
  // Warm-up of both servers (JIT, sockets), then interleaved rounds, all in this
  // one run: each ratio compares runs a few seconds apart, so a busy shared
  // machine weighs on both sides alike; the median round is reported.
  for (const r of [getMessage, check]) for (const t of [srv.bare, srv.serve]) await cannon(t, r);
  const rounds: { bareGm: Load; gm: Load; bareCa: Load; ca: Load }[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const b1 = await cannon(srv.bare, getMessage);
    const gm = await cannon(srv.serve, getMessage);
    const c1 = await cannon(srv.bare, check);
    const ca = await cannon(srv.serve, check);
    const c2 = await cannon(srv.bare, check);
    const b2 = await cannon(srv.bare, getMessage);
    rounds.push({ bareGm: meanLoad(b1, b2), gm, bareCa: meanLoad(c1, c2), ca });
  }
  const rssAfter = rssMb(serve.child.pid!);
  await Promise.all([stop(bare.child), stop(serve.child)]);
  await rm(dir, { recursive: true, force: true });
  console.log(`   msgflow serve start (spawn to listening): ${fmt(serve.startMs / 1000)} s  (target <= 5 s)`);
  console.log(`   serve RSS: ${fmt(rss, 0)} MB once started, ${fmt(rssAfter, 0)} MB after the load runs`);
  console.log(
    `   autocannon -c 50, ${cannonSeconds()} s per run, ${ROUNDS} rounds (bare, same request and answer bytes, before and after each):`,
  );
  rounds.forEach((x, k) =>
    console.log(
      `   round ${k + 1}: getMessage bare ${fmt(x.bareGm.rps, 0)} req/s, msgflow ${fmt(x.gm.rps, 0)} (${fmt(x.gm.rps / x.bareGm.rps)}); checkAccount (cached) bare ${fmt(x.bareCa.rps, 0)}, msgflow ${fmt(x.ca.rps, 0)} (${fmt(x.ca.rps / x.bareCa.rps)}); µs CPU/req bare ${fmt(x.bareGm.cpuUs, 1)} / ${fmt(x.bareCa.cpuUs, 1)}, msgflow ${fmt(x.gm.cpuUs, 1)} / ${fmt(x.ca.cpuUs, 1)}`,
    ),
  );
  const m = (f: (x: (typeof rounds)[number]) => number) => fmt(median(rounds.map(f)));
  console.log(
    `   median ratio to bare node:http, requests/s: getMessage ${m((x) => x.gm.rps / x.bareGm.rps)}, checkAccount (cached) ${m((x) => x.ca.rps / x.bareCa.rps)}  (target >= 0.6); server CPU per request, bare / msgflow: ${m((x) => x.bareGm.cpuUs / x.gm.cpuUs)}, ${m((x) => x.bareCa.cpuUs / x.ca.cpuUs)}`,
  );
}

async function bulk() {
  const dir = await mkdtemp(path.join(tmpdir(), 'msgflow-bench-bulk-'));
  const config = LocalSchema.parse({
    port: 0,
    dataDir: path.join(dir, 'data'),
    network: {
      population: [
        { prefix: '7920', share: 0.6 },
        { prefix: '7930', share: 0.6 },
      ],
    },
    instances: [
      {
        idInstance: ID,
        apiTokenInstance: TOKEN,
        rateLimits: Object.fromEntries(API_METHODS.map((m) => [m, 0])),
        checkAccountLimit: { numbers: 100_000_000, windowMinutes: 10, retryAfterSeconds: 7200 },
      },
    ],
  });
  const service = createLocalService(config, { baseDir: dir });
  await service.start();
  let peak = 0;
  const sample = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 200);
  const call = (method: string, body: unknown) =>
    service.handle({ httpMethod: 'POST', path: p(method), headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  console.log(
    `msgflow local service, bulk: ${LARGE.toLocaleString('en')} checks then ${LARGE.toLocaleString('en')} contacts, in-process, one at a time (node ${process.version})`,
  );
  for (const [what, base, one] of [
    ['checkAccount', CHECKED_BASE, (n: number) => call('checkAccount', { phoneNumber: n })],
    ['addContact', CONTACT_BASE, (n: number) => call('addContact', { chatId: `${n}@c.us`, firstName: `Name${n}`, lastName: 'Surname' })],
  ] as const) {
    const tenth = Math.max(1, Math.floor(LARGE / 10));
    const marks: number[] = [];
    const t0 = performance.now();
    let ok = 0;
    for (let i = 0; i < LARGE; i++) {
      if (i % tenth === 0) marks.push(performance.now());
      const r = await one(base + i);
      if (r.status === 200) ok++;
      else if (!(what === 'addContact' && r.status === 404)) throw new Error(`${what}: HTTP ${r.status} ${JSON.stringify(r.body)}`);
    }
    const end = performance.now();
    marks.push(end);
    const first = tenth / ((marks[1]! - marks[0]!) / 1000);
    const last = tenth / ((marks[marks.length - 1]! - marks[marks.length - 2]!) / 1000);
    const file = path.join(dir, 'data', ID, what === 'checkAccount' ? 'checks.jsonl' : 'contacts.jsonl');
    const bytes = (await stat(file)).size;
    console.log(
      `   ${what}: ${fmt(LARGE / ((end - t0) / 1000), 0)} records/s overall; first 10 % ${fmt(first, 0)}/s, last 10 % ${fmt(last, 0)}/s (ratio ${fmt(last / first)}); ${ok.toLocaleString('en')} answered 200; ${fmt(bytes / LARGE, 1)} bytes on disk per record`,
    );
  }
  clearInterval(sample);
  const heap = process.memoryUsage().heapUsed;
  console.log(`   peak RSS during the calls ${fmt(peak / 1048576, 0)} MB (V8 heap in use at the end ${fmt(heap / 1048576, 0)} MB)`);
  await service.close();
  // The restart is measured in a fresh process, as `msgflow serve` would start.
  const child = spawn(process.execPath, ['--import', 'tsx', SELF, '--child', 'restart', path.join(dir, 'data')], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  await once_(child, 'exit');
  console.log(`   ${out.trim()}`);
  await rm(dir, { recursive: true, force: true });
}

const i = process.argv.indexOf('--child');
if (i >= 0) await childMain(process.argv[i + 1]!, process.argv[i + 2] ?? '');
else if (process.argv.includes('--large')) await large();
else if (process.argv.includes('--bulk')) await bulk();
else await main();
