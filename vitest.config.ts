import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: [
      'src/**/*.test.ts',
      'workers/**/*.test.ts',
      'test/**/*.test.ts',
      'chaos/**/*.test.ts',
      'tools/**/*.test.ts',
      'bench/**/*.test.ts',
    ],
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    reporters: ['default', './test/support/summary-reporter.ts'],
  },
});
