import { defineConfig } from 'vitest/config';

// Two cores on CI machines: keep workers low so child-process and HTTP tests
// do not starve each other, and give durability tests room to breathe.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
