import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts', 'test/support/console-build.ts'],
    // Each file gets its own database (a clone of a migrated template) and Redis prefix,
    // so files run in parallel without seeing each other.
    fileParallelism: true,
    // Budgets that hold on a loaded two-core machine (several test files, and other work, at once):
    // a test that hangs still fails, later.
    testTimeout: 90_000,
    hookTimeout: 120_000,
  },
});
