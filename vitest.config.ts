import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["node/test/**/*.test.ts"],
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
  },
});
