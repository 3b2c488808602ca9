import type { Reporter, TestModule } from 'vitest/node';

/**
 * Prints the plain closing line `tests: N passed, N failed[, N skipped]` after vitest's own summary,
 * so that any CI reading the last lines sees the counts in a runner-neutral form.
 */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: readonly TestModule[], unhandledErrors: readonly unknown[]): void {
    let passed = 0;
    let failed = unhandledErrors.length;
    let skipped = 0;
    for (const module of testModules) {
      const moduleFailed = module.state() === 'failed';
      if (moduleFailed && [...module.children.allTests()].length === 0) failed++;
      for (const test of module.children.allTests()) {
        const state = test.result().state;
        if (state === 'passed') passed++;
        // A test that never ran because its file's setup failed is a failure, not a skip.
        else if (state === 'failed' || moduleFailed) failed++;
        else skipped++;
      }
    }
    const tail = skipped > 0 ? `, ${skipped} skipped` : '';
    process.stdout.write(`\ntests: ${passed} passed, ${failed} failed${tail}\n`);
  }
}
