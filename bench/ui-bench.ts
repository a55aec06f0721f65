/**
 * Dashboard responsiveness with a large history: seeds a temp project's
 * lowdb store with 10,000 finished runs and one run of 100,000 items (1,000
 * of them failed), serves it with `msgflow ui` in a child process, then
 *   - autocannon -c 50 against GET /api/runs?limit=50 (p50/p99 latency; the
 *     default 35 s include one background reload of the whole history),
 *   - the same against GET /api/runs/<the 100,000-item run>,
 *   - first paint / first contentful paint of the Runs page in Chromium
 *     (Performance API), when /usr/bin/chromium exists.
 *
 *   node --import tsx bench/ui-bench.ts [--runs 10000] [--items 100000] [--duration 10]
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { createLowdbStore } from '../src/store/lowdb-store.js';
import { CHROMIUM, haveChromium, launchChromium } from '../test/support/chromium.js';
import type { ItemResult, RunRecord } from '../src/store/types.js';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '10000' },
    items: { type: 'string', default: '100000' },
    duration: { type: 'string', default: '35' },
  },
});
const RUNS = Number(values.runs);
const ITEMS = Number(values.items);
const REPO = path.resolve(import.meta.dirname, '..');

const dir = mkdtempSync(path.join(tmpdir(), 'msgflow-ui-bench-'));
mkdirSync(path.join(dir, 'flows'));
writeFileSync(
  path.join(dir, 'config.yaml'),
  'instances:\n  default: { apiUrl: local }\nlocal:\n  port: 0\n  instances: [{ idInstance: "1101000001", apiTokenInstance: bench-token }]\nstore: { driver: lowdb, dir: .msgflow/state }\nlogLevel: error\n',
);
for (const name of ['alpha', 'beta', 'gamma', 'delta']) {
  writeFileSync(
    path.join(dir, 'flows', `${name}.yaml`),
    `name: ${name}\non: { schedule: { cron: "0 * * * *" } }\nsteps:\n  - { id: say, uses: log, with: { message: hi } }\n`,
  );
}

async function seed(): Promise<string> {
  const store = createLowdbStore({ dir: path.join(dir, '.msgflow/state') });
  const t0 = Date.now() - RUNS * 60_000;
  const flows = ['alpha', 'beta', 'gamma', 'delta'];
  const statuses: RunRecord['status'][] = ['succeeded', 'succeeded', 'succeeded', 'failed', 'cancelled'];
  const started = Date.now();
  for (let i = 0; i < RUNS; i += 200) {
    await Promise.all(
      Array.from({ length: Math.min(200, RUNS - i) }, async (_, j) => {
        const n = i + j;
        const at = t0 + n * 60_000;
        const run: RunRecord = {
          id: `${flows[n % 4]}-${String(n).padStart(6, '0')}`,
          flow: flows[n % 4]!,
          status: statuses[n % statuses.length]!,
          trigger: 'schedule',
          dryRun: false,
          startedAt: at,
          finishedAt: at + 1200,
          durationMs: 1200,
          updatedAt: at + 1200,
          itemsDone: 1,
          itemsFailed: 0,
          resumes: 0,
        };
        await store.createRun(run);
      }),
    );
  }
  // One big run: 100,000 items, 1,000 failed.
  const big = 'alpha-big-100k';
  const at = Date.now() - 3_600_000;
  await store.createRun({
    id: big,
    flow: 'alpha',
    status: 'failed',
    trigger: 'manual',
    dryRun: false,
    startedAt: at,
    finishedAt: at + 600_000,
    durationMs: 600_000,
    updatedAt: at + 600_000,
    itemsDone: ITEMS - 1000,
    itemsFailed: 1000,
    resumes: 0,
  });
  await store.saveStep({
    runId: big,
    step: 'each',
    action: 'checkAccount',
    status: 'failed',
    startedAt: at,
    finishedAt: at + 600_000,
    total: ITEMS,
    done: ITEMS - 1000,
    failed: 1000,
    forEach: true,
  });
  for (let i = 0; i < ITEMS; i += 5000) {
    const batch: ItemResult[] = [];
    for (let k = i; k < Math.min(ITEMS, i + 5000); k++) {
      const failed = k % 100 === 0;
      batch.push({
        step: 'each',
        index: k,
        status: failed ? 'failed' : 'succeeded',
        attempts: 1,
        finishedAt: at + k,
        ...(failed ? { error: { message: 'not on messenger', code: 'NOT_ON_MESSENGER' } } : { output: { exist: true } }),
      });
    }
    await store.appendItems(big, batch);
  }
  await store.close();
  console.log(`seeded ${RUNS} runs and one of ${ITEMS} items in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return big;
}

function serve(): Promise<{ url: string; stop(): void }> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', path.join(REPO, 'src/cli/main.ts'), 'ui', '--port', '0', '-c', path.join(dir, 'config.yaml')],
      { cwd: REPO, stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      const m = /dashboard on (http:\/\/[\d.]+:\d+)/.exec(out);
      if (m) resolve({ url: m[1]!, stop: () => child.kill('SIGTERM') });
    });
    child.on('exit', (code) => reject(new Error(`msgflow ui exited ${code}: ${out}`)));
  });
}

async function cannon(url: string, seconds = Number(values.duration)) {
  const r = await autocannon({ url, connections: 50, duration: seconds });
  return {
    requests: r.requests.total,
    rps: Math.round(r.requests.average),
    p50: r.latency.p50,
    p99: r.latency.p99,
    max: r.latency.max,
    errors: r.errors + r.non2xx,
  };
}

const big = await seed();
const server = await serve();
try {
  const t = Date.now();
  await fetch(`${server.url}/api/runs?limit=50`);
  console.log(`first /api/runs (loads the history into the index): ${Date.now() - t} ms`);
  if (haveChromium()) {
    const browser = await launchChromium();
    const ctx = browser.context;
    const page = await ctx.newPage();
    const paints: Array<Record<string, number>> = [];
    for (let i = 0; i < 5; i++) {
      await page.goto(`${server.url}/#/runs`, { waitUntil: 'load' });
      await page.locator('tr[data-run]').first().waitFor();
      paints.push(
        await page.evaluate(() => {
          const p = Object.fromEntries(performance.getEntriesByType('paint').map((e) => [e.name, Math.round(e.startTime)]));
          // app.js marks the moment a page's data is on screen.
          const rendered = performance.getEntriesByName('msgflow:rendered')[0];
          return { ...p, tableRendered: Math.round(rendered?.startTime ?? -1) };
        }),
      );
      await page.goto('about:blank');
    }
    console.log('Runs page (ms from navigation start):', paints);
    await browser.close();
  } else {
    console.log(`no Chromium at ${CHROMIUM}: first paint not measured`);
  }
  // The machine's floor: a static file from memory, same connections, same server.
  console.log('baseline GET /assets/app.css', await cannon(`${server.url}/assets/app.css`, 10));
  console.log('GET /api/runs?limit=50', await cannon(`${server.url}/api/runs?limit=50`));
  console.log(
    'GET /api/runs?flow=beta&status=failed&limit=50',
    await cannon(`${server.url}/api/runs?flow=beta&status=failed&limit=50`, 10),
  );
  console.log(`GET /api/runs/${big}`, await cannon(`${server.url}/api/runs/${big}`, 10));
  console.log('GET /api/instances', await cannon(`${server.url}/api/instances`, 10));
} finally {
  server.stop();
  rmSync(dir, { recursive: true, force: true });
}
