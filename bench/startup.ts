/**
 * Start-up time of the CLI (run by hand, not a test; hyperfine is not installed here):
 *
 *   npm run build && node --import tsx bench/startup.ts
 *
 * Spawns `node bin/msgflow.js --version` BENCH_SPAWNS (20) times after 2
 * discarded warm-up runs, alternated with `node -e 0` (the floor every Node
 * CLI pays), and prints the median, mean, min and max wall time from spawn
 * to exit of both. BENCH_BASELINE_BIN=/path/to/other/bin/msgflow.js times a
 * second checkout alongside (e.g. main's) and prints the ratio.
 *
 * Then the daemon: `msgflow start --no-listen --no-ui` on a copy of this
 * repository's example project (config.yaml, flows/, data/, plugins/), a
 * fresh state directory each time, BENCH_DAEMON_SPAWNS (7) times, alternated
 * with the baseline when there is one: wall and CPU time (user + system,
 * from /proc) from spawn to its `started;` line.
 */
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
const BIN = path.join(ROOT, 'bin', 'msgflow.js');
const DAEMON_SPAWNS = Number(process.env.BENCH_DAEMON_SPAWNS ?? 7);
const SPAWNS = Number(process.env.BENCH_SPAWNS ?? 20);
/** Another checkout's bin/msgflow.js (built) to time alongside, e.g. main's: the ratio is the start-up change. */
const BASELINE = process.env.BENCH_BASELINE_BIN;

/** Wall ms from spawn to exit of each command, the commands alternated so a change of the machine's load hits both. */
function times(commands: string[][]): number[][] {
  const out = commands.map((): number[] => []);
  for (let i = 0; i < SPAWNS + 2; i++) {
    commands.forEach((args, k) => {
      const t = performance.now();
      const r = spawnSync(process.execPath, args, { stdio: 'ignore' });
      if (r.status !== 0) throw new Error(`${args.join(' ')}: exit ${r.status}`);
      if (i >= 2) out[k]!.push(performance.now() - t);
    });
  }
  return out;
}

function summary(xs: number[]): string {
  const s = [...xs].sort((a, b) => a - b);
  const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
  return `median ${s[Math.floor(s.length / 2)]!.toFixed(0)} ms, mean ${mean.toFixed(0)}, min ${s[0]!.toFixed(0)}, max ${s[s.length - 1]!.toFixed(0)}`;
}

const [version, floor, baseline] = times([[BIN, '--version'], ['-e', '0'], ...(BASELINE ? [[BASELINE, '--version']] : [])]);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log(`msgflow --version start-up, ${SPAWNS} spawns (node ${process.version})`);
console.log(`   msgflow --version  ${summary(version!)}`);
console.log(`   node -e 0          ${summary(floor!)}`);
if (baseline) {
  console.log(`   baseline --version ${summary(baseline)}  (${BASELINE})`);
  console.log(`   median ratio to the baseline: ${(median(version!) / median(baseline)).toFixed(2)}  (target <= 1.2)`);
}

/** A copy of the example project, its plugins resolving packages from this checkout's node_modules. */
function exampleProject(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'msgflow-bench-startup-'));
  for (const part of ['config.yaml', 'flows', 'data', 'plugins', 'public'])
    cpSync(path.join(ROOT, part), path.join(dir, part), { recursive: true });
  symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'));
  return dir;
}

/** Wall and CPU ms of `msgflow start` from spawn to its `started;` line (the process is then killed). */
async function daemonStart(bin: string, dir: string): Promise<{ wall: number; cpu: number }> {
  rmSync(path.join(dir, '.msgflow'), { recursive: true, force: true });
  const t = performance.now();
  const child = spawn(process.execPath, [bin, 'start', '--no-listen', '--no-ui'], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const wall = await new Promise<number>((resolve, reject) => {
    const seen = (d: Buffer) => {
      out += d;
      if (/^msgflow: started;/m.test(out)) resolve(performance.now() - t);
    };
    child.stdout.on('data', seen);
    child.stderr.on('data', seen);
    child.on('exit', (code) => reject(new Error(`${bin} start exited (${code}) before it started:\n${out}`)));
  });
  // utime + stime, in clock ticks (100 a second on Linux).
  const fields = readFileSync(`/proc/${child.pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  const cpu = (Number(fields[11]) + Number(fields[12])) * 10;
  child.kill('SIGKILL');
  await new Promise((r) => child.once('close', r));
  return { wall, cpu };
}

const dir = exampleProject();
try {
  const bins = [BIN, ...(BASELINE ? [BASELINE] : [])];
  const runs = bins.map((): { wall: number; cpu: number }[] => []);
  for (let i = 0; i < DAEMON_SPAWNS + 1; i++)
    for (const [k, bin] of bins.entries()) {
      const r = await daemonStart(bin, dir);
      if (i > 0) runs[k]!.push(r); // the first round warms the disk cache
    }
  console.log(`msgflow start --no-listen --no-ui on the example project, to its 'started;' line, ${DAEMON_SPAWNS} spawns`);
  for (const [k, bin] of bins.entries())
    console.log(
      `   ${k === 0 ? 'this tree' : 'baseline '}  wall ${summary(runs[k]!.map((r) => r.wall))}; CPU median ${median(runs[k]!.map((r) => r.cpu)).toFixed(0)} ms${k === 0 ? '' : `  (${bin})`}`,
    );
  if (BASELINE)
    console.log(
      `   median ratio to the baseline: wall ${(median(runs[0]!.map((r) => r.wall)) / median(runs[1]!.map((r) => r.wall))).toFixed(2)}, CPU ${(median(runs[0]!.map((r) => r.cpu)) / median(runs[1]!.map((r) => r.cpu))).toFixed(2)}`,
    );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
