import type { Reporter, SerializedError, TestModule } from "vitest/node";

/**
 * Prints one plain "N passed, N failed, N skipped" line at the end, for CI logs
 * that read it. A test file that failed outside its tests (an import error, a
 * failing beforeAll because a service is down) counts as a failure, as does an
 * unhandled error: the line must never read "0 failed" for a red run.
 */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(
    testModules: ReadonlyArray<TestModule>,
    unhandledErrors: ReadonlyArray<SerializedError>,
  ): void {
    const counts = { passed: 0, failed: unhandledErrors.length, skipped: 0 };
    for (const module of testModules) {
      let failedTests = 0;
      for (const test of module.children.allTests()) {
        const state = test.result().state;
        if (state === "passed") counts.passed++;
        else if (state === "failed") failedTests++;
        else counts.skipped++;
      }
      counts.failed += failedTests;
      if (failedTests === 0 && module.state() === "failed") counts.failed++;
    }
    console.log(`\n${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped`);
  }
}
