import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// Two forked workers, on two cores. An earlier 2-core machine ran the suite
// fastest with four (81 s with two, 52 s with four): its tests often waited
// on a child process rather than computing. The machines CI now runs on
// fault memory in slowly (a first touch of 1 GB takes 3 s; the suite takes
// 4.6 M page faults) and stay busy throughout, so more workers only add
// contention. Measured 2026-11-28, one run each: two workers 234 s wall and
// 377 CPU-s, the longest test 46 s; three 257 s, 449 CPU-s, 86 s; four
// 296 s, 520 CPU-s, 116 s (a kill -9 test close to the 120 s bound below).
// Test files share a worker's module cache (isolate: false cut the import
// phase of a 260-test subset from 20 s to 10 s; tests that change globals
// restore them).
export default defineConfig({
  // A plugin loaded in-process (a project's `import ... from 'msgflow'`) gets the
  // sources under test, the modules the test has loaded already, instead of
  // dist/ (which may be stale, and which vite would transform anew: 2-4 s).
  // Child processes resolve 'msgflow' as a user's project does (node_modules, dist).
  resolve: { alias: [{ find: /^msgflow$/, replacement: fileURLToPath(new URL('./src/index.ts', import.meta.url)) }] },
  test: {
    include: ['test/**/*.test.ts'],
    // One temporary root per run, on tmpfs where there is one, removed at the end (test/support/temp-root.ts).
    globalSetup: ['test/support/temp-root.ts'],
    pool: 'forks',
    maxWorkers: 2,
    isolate: false,
    // Bounds that turn a hang into a failure, not budgets: on a 2-core machine shared with
    // other builds (CI) the process tests ran 3x slower than alone, and 30 s failed them.
    testTimeout: 120_000,
    hookTimeout: 120_000,
    // Transformed modules kept on disk between runs (node_modules/.experimental-vitest-cache,
    // keyed by each file's content): a run after the first transforms only what changed. On 519
    // tests (engine-run, engine-load, client, engine-schedule), 2 cores shared with other builds:
    // 13.5-13.9 CPU-s and 27-29 s without it, 10.6 CPU-s and 20 s with it warm.
    experimental: { fsModuleCache: true },
  },
});
