/**
 * What growing the method table costs (run by hand, not a test): start-up of
 * the CLI and the local service's getMessage rate, this checkout against an
 * older one built beside it (e.g. the last commit with the 18 methods of
 * before), measured alternately in one run:
 *
 *   npm run build
 *   git worktree add /tmp/base <commit> && (cd /tmp/base && cp -al ../path/node_modules . && npx tsc -p tsconfig.json)
 *   BENCH_BASELINE_DIR=/tmp/base node --import tsx bench/methods-growth.ts
 *
 * Prints, per build: the median wall time of `msgflow --version` over
 * BENCH_SPAWNS (20) spawns, alternated, and getMessage requests/second of
 * `msgflow serve` under autocannon -c 50 (one seeded message, rate limits
 * off), BENCH_ROUNDS (3) alternated rounds, medians; and the ratio of this
 * build to the baseline (target: within 5 %).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';

const HERE = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
const BASELINE = process.env.BENCH_BASELINE_DIR;
const SPAWNS = Number(process.env.BENCH_SPAWNS ?? 20);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const ID = '1101000001';
const TOKEN = 'bench-token-123';
const CHAT = '79001112233@c.us';
const MESSAGE = 'SEEDGREETING0000001';

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** Wall ms of `msgflow --version` for each build, spawns alternated so the machine's drift hits both. */
function startups(dirs: string[]): number[][] {
  const out = dirs.map((): number[] => []);
  for (let i = 0; i < SPAWNS + 2; i++) {
    dirs.forEach((dir, k) => {
      const t = performance.now();
      const r = spawnSync(process.execPath, [path.join(dir, 'bin', 'msgflow.js'), '--version'], { stdio: 'ignore' });
      if (r.status !== 0) throw new Error(`${dir}: msgflow --version exited ${r.status}`);
      if (i >= 2) out[k]!.push(performance.now() - t);
    });
  }
  return out;
}

/** `msgflow serve` of one build on a fresh instance folder with one seeded message; resolves with its port. */
async function serve(dir: string): Promise<{ child: ChildProcess; port: number; tmp: string }> {
  const tmp = await mkdtemp(path.join(tmpdir(), 'msgflow-growth-'));
  await writeFile(
    path.join(tmp, 'seed.yaml'),
    `chats:\n  - chatId: "${CHAT}"\n    messages:\n      - { type: incoming, idMessage: "${MESSAGE}", typeMessage: textMessage, textMessage: "Hi", timestamp: 1767225600 }\n`,
  );
  await writeFile(
    path.join(tmp, 'config.yaml'),
    `local:\n  dataDir: data\n  instances:\n    - idInstance: "${ID}"\n      apiTokenInstance: "${TOKEN}"\n      rateLimits: { getMessage: 0 }\n      seed: seed.yaml\n`,
  );
  const child = spawn(process.execPath, [path.join(dir, 'bin', 'msgflow.js'), 'serve', '--config', 'config.yaml', '--port', '0'], {
    cwd: tmp,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    let text = '';
    const onData = (c: Buffer) => {
      text += c.toString();
      const m = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(text);
      if (m) resolve(Number(m[1]));
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`${dir}: msgflow serve exited ${code}: ${text}`)));
  });
  return { child, port, tmp };
}

async function getMessageRate(port: number): Promise<number> {
  const r = await autocannon({
    url: `http://127.0.0.1:${port}/waInstance${ID}/getMessage/${TOKEN}`,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ chatId: CHAT, idMessage: MESSAGE }),
    connections: 50,
    duration: SECONDS,
  });
  if (r.non2xx > 0 || r.errors > 0) throw new Error(`getMessage on port ${port}: ${r.non2xx} non-2xx, ${r.errors} errors`);
  return r.requests.average;
}

async function main() {
  if (!BASELINE) throw new Error('BENCH_BASELINE_DIR: the built checkout to compare with (see the header of this file)');
  const dirs = [BASELINE, HERE];
  const names = ['baseline', 'this build'];
  console.log(`methods-growth (node ${process.version}): ${BASELINE} vs ${HERE}`);
  const [base, now] = startups(dirs);
  const servers = await Promise.all(dirs.map(serve));
  try {
    for (const s of servers) await getMessageRate(s.port); // warm-up (JIT, sockets), discarded
    const rates = dirs.map((): number[] => []);
    for (let r = 0; r < ROUNDS; r++) for (const [k, s] of servers.entries()) rates[k]!.push(await getMessageRate(s.port));
    console.log(`msgflow --version, median of ${SPAWNS} alternated spawns:`);
    console.log(
      `  ${names[0]}: ${median(base!).toFixed(0)} ms; ${names[1]}: ${median(now!).toFixed(0)} ms; ratio ${(median(now!) / median(base!)).toFixed(3)}`,
    );
    console.log(`getMessage requests/s, autocannon -c 50, ${SECONDS} s, median of ${ROUNDS} alternated rounds:`);
    rates.forEach((xs, k) => console.log(`  ${names[k]}: ${median(xs).toFixed(0)} (${xs.map((x) => x.toFixed(0)).join(', ')})`));
    console.log(`  ratio ${(median(rates[1]!) / median(rates[0]!)).toFixed(3)} (target within 5 %)`);
  } finally {
    for (const s of servers) {
      s.child.kill('SIGTERM');
      await rm(s.tmp, { recursive: true, force: true });
    }
  }
}

await main();
