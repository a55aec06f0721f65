import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// Measured on the 2-core machine (see README, Performance): forked workers,
// four of them although there are two cores (the whole suite: 81 s with two,
// 52 s with four, 50 s with six; many tests wait on a child process, a lease
// or a socket rather than compute, so two more workers fill that time; six
// put the longest file, the BullMQ kill -9 test, on the critical path), and
// test files sharing a worker's module cache (isolate: false cut the import
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
    maxWorkers: 4,
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
