import { defineConfig } from "vitest/config";

/**
 * The HTTP API suites that run on both backends (node/test/integration/support/api.ts):
 * the `services` project runs them on the real Postgres and Redis with every
 * other file, the `embedded` project runs the same files again on the
 * embedded default of `chronofence dev` (PGlite, in-process hot tier).
 */
const BOTH_BACKENDS = [
  "node/test/integration/api-tasks.test.ts",
  "node/test/integration/api-executions.test.ts",
];

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Integration suites share one Postgres/Redis/Kafka; files run in parallel
    // but each test isolates itself with its own schema, key prefix and topics.
    fileParallelism: true,
    // First: refuse a stale dist/ or wheel.wasm (child-process tests run the
    // built CLI; `npm test` builds first). Then a Kafka broker on
    // 127.0.0.1:9092 (scripts/kafka.sh; a no-op when one answers).
    globalSetup: ["scripts/vitest-dist-check.mjs", "scripts/kafka/vitest-global-setup.mjs"],
    reporters: ["default", "./node/test/support/summary-reporter.ts"],
    projects: [
      {
        extends: true,
        test: { name: "services", include: ["node/test/**/*.test.ts"] },
      },
      {
        extends: true,
        test: { name: "embedded", include: BOTH_BACKENDS, env: { CF_TEST_BACKEND: "embedded" } },
      },
    ],
  },
});
