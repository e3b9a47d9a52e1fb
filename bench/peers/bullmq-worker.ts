/**
 * One BullMQ worker process for the end-to-end benchmark's peer: a no-op
 * processor on the queue named by the environment. Prints `ready` once it
 * is connected; closes gracefully on SIGTERM.
 *
 * BENCH_BULLMQ_REDIS_URL, BENCH_BULLMQ_PREFIX, BENCH_BULLMQ_QUEUE, BENCH_BULLMQ_CONCURRENCY
 */
import { Worker } from "bullmq";
import { bullmqConnection } from "./bullmq-connection.js";

const env = (name: string): string => {
  const value = process.env[name];
  if (value === undefined) throw new Error(`${name} is required`);
  return value;
};

const worker = new Worker(env("BENCH_BULLMQ_QUEUE"), async () => undefined, {
  connection: bullmqConnection(env("BENCH_BULLMQ_REDIS_URL")),
  prefix: env("BENCH_BULLMQ_PREFIX"),
  concurrency: Number(env("BENCH_BULLMQ_CONCURRENCY")),
  // Keep every finished job: the benchmark reads their timestamps afterwards.
  removeOnComplete: { count: Number.MAX_SAFE_INTEGER },
  removeOnFail: { count: Number.MAX_SAFE_INTEGER },
});
worker.on("error", (error) => console.error(`bullmq worker: ${error.message}`));
await worker.waitUntilReady();
console.log("ready");
process.once("SIGTERM", () => {
  worker.close().then(
    () => process.exit(0),
    () => process.exit(1),
  );
});
