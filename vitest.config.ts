import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts', 'test/support/console-build.ts'],
    // Each file gets its own database (a clone of a migrated template) and Redis prefix,
    // so files run in parallel without seeing each other.
    fileParallelism: true,
    // Two files at a time even on two cores: most of a test's time is spent waiting on PostgreSQL,
    // Redis, Chromium and timers, not on its own CPU (vitest's default there is one at a time).
    maxWorkers: 2,
    // Budgets that hold on a loaded two-core machine (several test files, and other work, at once):
    // a test that hangs still fails, later.
    testTimeout: 90_000,
    hookTimeout: 120_000,
  },
});
