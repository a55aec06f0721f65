import { defineConfig } from 'vitest/config';

// Measured on the 2-core machine (see README, Performance): forked workers
// (threads cannot process.chdir, which the flow-test and validate tests use),
// two of them (four were slower: the spawned CLI processes compete for the
// same cores), and test files sharing a worker's module cache (isolate:
// false cut the import phase of a 260-test subset from 20 s to 10 s; tests
// that change globals restore them).
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    maxWorkers: 2,
    isolate: false,
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
