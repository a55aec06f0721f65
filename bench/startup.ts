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
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';

const BIN = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'bin', 'msgflow.js');
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
