/**
 * Dialog sessions at scale (docs/conversations.md): N simultaneous sessions
 * of the menu bot (flows/welcome.yaml) on the in-process local service, with
 * the runtime of `msgflow start` (createRuntime: engine, store, dialog step)
 * and its notification dispatcher, per store driver.
 *
 *   node --expose-gc --import tsx bench/sessions.ts [--sessions 10000] [--drivers memory,lowdb,redis] [--inflight 8]
 *
 * Phase 1 opens N sessions (each chat writes "hi": the menu goes out);
 * phase 2 moves each one on (each writes "1": the email question goes out)
 * while all N are live. Engine time of a message: from the dispatcher taking
 * its notification to its run's end (the dialog step read the session,
 * decided, sent through the client to the service's queue, wrote the
 * session), `inflight` messages at once: 8 by default, what a daemon sees
 * when several chats write at once (the dispatcher runs one message at a
 * time per chat, and the chats' messages in parallel); more would measure
 * the queue in front of the engine rather than the engine. The time is
 * taken from the dispatcher's call to the run's end event, so it includes
 * waiting for the store and the event loop, not only the engine's own code.
 * Reported: p50/p99 of phase 2; the process's CPU time (user + system) per
 * message of phase 2, service included, steadier than wall time on a shared
 * machine; the heap growth per live session after
 * phase 1, which holds the in-process local service's chat histories and
 * send queue (the service, not the engine) and whatever the engine keeps in
 * this process: the memory driver every record, lowdb its run index and kv
 * locations, redis nothing of the sessions, so redis's figure is close to
 * the service's own share; and the bytes of one session as stored (its
 * record and its idle timer, as JSON; for redis the MEMORY USAGE of its keys)
 * and, for lowdb, every file of the store per session: the two messages'
 * run records, journals and leases included (runs are history: kept).
 * Each driver runs in this process one after the other, from a fresh store.
 */
import { mkdtemp, readFile, readdir, stat, writeFile, mkdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { loadConfig } from '../src/config/load.js';
import { createRuntime } from '../src/runtime/runtime.js';
import { identityOf } from '../src/runtime/clients.js';
import { NotificationDispatcher, notificationRunId } from '../src/engine/notify/dispatcher.js';
import { parseNotification } from '../src/engine/notify/body.js';
import { DIALOG_IDLE_NS, DIALOG_SESSIONS_NS, sharedKvName, sharedRecords } from '../src/engine/shared.js';
import { API_METHODS } from '../src/api/methods.js';

const REDIS_URL = process.env.MSGFLOW_BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const quiet = { debug() {}, info() {}, warn() {}, error() {} };
type Driver = 'memory' | 'lowdb' | 'redis';

const chatOf = (i: number) => `7920${String(i).padStart(7, '0')}@c.us`;

async function project(driver: Driver, prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'msgflow-bench-sessions-'));
  const limits = API_METHODS.map((m) => `${m}: 0`).join(', ');
  const store =
    driver === 'redis'
      ? `store: { driver: redis, url: "${REDIS_URL}", prefix: "${prefix}" }`
      : `store: { driver: ${driver}, dir: .msgflow/state }`;
  await writeFile(
    join(dir, 'config.yaml'),
    `instances:
  default: { apiUrl: local, rateLimit: false }
local:
  port: 0
  dataDir: .msgflow/local
  network: { population: [{ prefix: "7920", share: 1 }] }
  instances:
    - idInstance: "1101000001"
      apiTokenInstance: bench-sessions-token
      sendIntervalMs: 500
      rateLimits: { ${limits} }
${store}
`,
  );
  await mkdir(join(dir, 'flows'));
  // The menu bot as shipped (one run at a time per chat).
  const flow = await readFile(new URL('../flows/welcome.yaml', import.meta.url), 'utf8');
  await writeFile(join(dir, 'flows', 'welcome.yaml'), flow);
  return dir;
}

/** Bytes of the files under `dir` (their sizes, not the disk blocks they take). */
async function bytesUnder(dir: string): Promise<number> {
  let total = 0;
  for (const e of await readdir(dir, { withFileTypes: true, recursive: true }))
    if (e.isFile()) total += (await stat(join(e.parentPath, e.name))).size;
  return total;
}

const pct = (xs: number[], p: number) => xs[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;

async function runDriver(driver: Driver, n: number, inflight: number): Promise<Record<string, string>> {
  const prefix = `msgflow-bench-sessions:${randomBytes(4).toString('hex')}:`;
  const dir = await project(driver, prefix);
  const config = loadConfig(join(dir, 'config.yaml'));
  const runtime = await createRuntime({ config, command: 'start', logger: quiet });
  try {
    const { flows } = runtime.flows();
    const identity = identityOf(config, 'default');
    const dispatcher = new NotificationDispatcher({ ...runtime, flows, identityFor: () => identity, logger: quiet });
    const ended = new Map<string, () => void>();
    for (const ev of ['run:finished', 'run:failed'] as const) runtime.bus.on(ev, (e: { runId: string }) => ended.get(e.runId)?.());
    let seq = 0;
    const message = async (i: number, text: string): Promise<number> => {
      const idMessage = `BENCH${String(++seq).padStart(12, '0')}`;
      const n = parseNotification({
        typeWebhook: 'incomingMessageReceived',
        idMessage,
        timestamp: Math.floor(Date.now() / 1000),
        senderData: { chatId: chatOf(i), sender: chatOf(i), senderName: 'Bench' },
        messageData: { typeMessage: 'textMessage', textMessageData: { textMessage: text } },
      })!;
      const runId = notificationRunId('welcome', identity, `incomingMessageReceived:${idMessage}`);
      const done = new Promise<void>((r) => ended.set(runId, r));
      const t0 = performance.now();
      await dispatcher.dispatch('default', n);
      await done;
      ended.delete(runId);
      return performance.now() - t0;
    };
    const phase = async (text: string): Promise<number[]> => {
      const times: number[] = [];
      let next = 0;
      await Promise.all(
        Array.from({ length: inflight }, async () => {
          while (next < n) times.push(await message(next++, text));
        }),
      );
      return times.sort((a, b) => a - b);
    };
    global.gc?.();
    const heap0 = process.memoryUsage().heapUsed;
    const t1 = performance.now();
    const open = await phase('hi');
    const openS = (performance.now() - t1) / 1000;
    global.gc?.();
    const heap1 = process.memoryUsage().heapUsed;
    const cpu0 = process.cpuUsage();
    const move = await phase('1');
    const cpu = process.cpuUsage(cpu0);
    const sessions = await sharedRecords(runtime.store, DIALOG_SESSIONS_NS).entries();
    if (sessions.length === 0) {
      const [last] = await runtime.store.listRuns({ limit: 1 });
      throw new Error(
        `no session stored: the dialog step of the last run says ${JSON.stringify((await runtime.store.getSteps(last!.id))[0]?.output)}`,
      );
    }
    const live = sessions.filter(([, s]) => s.state === 'email' && s.status === 'active').length;
    const [key, one] = sessions[0]!;
    const timer = await sharedRecords(runtime.store, DIALOG_IDLE_NS).get(key);
    let bytes = Buffer.byteLength(JSON.stringify(one)) + Buffer.byteLength(JSON.stringify(timer ?? null)) + 2 * Buffer.byteLength(key);
    if (driver === 'redis') {
      const r = new Redis(REDIS_URL);
      const keys = [
        ...(await r.keys(`${prefix}*${sharedKvName(DIALOG_SESSIONS_NS)}*`)),
        ...(await r.keys(`${prefix}*${sharedKvName(DIALOG_IDLE_NS)}*`)),
      ];
      const hashes = await Promise.all(keys.map((k) => r.call('MEMORY', 'USAGE', k) as Promise<number>));
      bytes = hashes.reduce((a, b) => a + b, 0) / n;
      await r.quit();
    }
    return {
      driver,
      sessions: n.toLocaleString('en'),
      live: live.toLocaleString('en'),
      'open msg/s': Math.round(n / openS).toLocaleString('en'),
      'open p99 ms': pct(open, 99).toFixed(1),
      'p50 ms': pct(move, 50).toFixed(1),
      'p99 ms': pct(move, 99).toFixed(1),
      'CPU µs/msg': Math.round((cpu.user + cpu.system) / n).toLocaleString('en'),
      'heap B/session': global.gc ? Math.round((heap1 - heap0) / n).toLocaleString('en') : '(run with --expose-gc)',
      'stored B/session': Math.round(bytes).toLocaleString('en'),
      'state dir B/session':
        driver === 'lowdb' ? Math.round((await bytesUnder(join(dir, '.msgflow/state'))) / n).toLocaleString('en') : '-',
    };
  } finally {
    await runtime.close();
    if (driver === 'redis') {
      const r = new Redis(REDIS_URL);
      for (;;) {
        const keys = await r.keys(`${prefix}*`);
        if (keys.length === 0) break;
        await r.del(...keys.slice(0, 1000));
      }
      await r.quit();
    }
    await rm(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      sessions: { type: 'string', default: '10000' },
      drivers: { type: 'string', default: 'memory,lowdb,redis' },
      inflight: { type: 'string', default: '8' },
    },
  });
  const rows: Record<string, string>[] = [];
  for (const d of values.drivers.split(',') as Driver[]) {
    rows.push(await runDriver(d, Number(values.sessions), Number(values.inflight)));
    console.error(JSON.stringify(rows.at(-1)));
  }
  const cols = Object.keys(rows[0]!);
  console.log(`| ${cols.join(' | ')} |\n| ${cols.map(() => '---').join(' | ')} |`);
  for (const r of rows) console.log(`| ${cols.map((c) => r[c]).join(' | ')} |`);
}

await main();
