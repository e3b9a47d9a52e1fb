/**
 * The dispatcher role as a child process (configured from the environment
 * like `chronofence run --roles dispatcher`, and printing the same `ready`
 * line), with one trap for the paused-dispatcher test: after SIGUSR2 (answered
 * with `TRAP SET`), the next arm with claims prints `STOPPING BEFORE ARM
 * <json>` (its fences and claims) and stops the process with SIGSTOP right
 * there — claimed under a lease that was valid, the fenced UPDATE not yet
 * sent. Every arm that starts after the SIGCONT prints `ARM AFTER RESUME
 * <json>` with what the UPDATE armed, once Postgres has answered.
 */
import { systemClock } from "../../../src/adapters/clock/system-clock.js";
import { createLogger } from "../../../src/adapters/logging/logger.js";
import { resolveConfig } from "../../../src/config/config.js";
import { startDispatchRoles } from "../../../src/main/dispatch.js";
import type { ArmBatch, DispatchStore } from "../../../src/ports/dispatch-store.js";

let trapSet = false;
let resumed = false;
process.on("SIGUSR2", () => {
  trapSet = true;
  process.stdout.write("TRAP SET\n");
});

const line = (tag: string, value: unknown) =>
  process.stdout.write(`${tag} ${JSON.stringify(value)}\n`);

function stoppingBeforeArm(store: DispatchStore): DispatchStore {
  return {
    scheduledBefore: (...args) => store.scheduledBefore(...args),
    rearmStale: (...args) => store.rearmStale(...args),
    async arm(batches, nowMs) {
      const withClaims = batches.filter((b) => b.claims.length > 0);
      if (trapSet && withClaims.length > 0) {
        trapSet = false;
        line("STOPPING BEFORE ARM", withClaims.map(describe));
        // stdout to a pipe is synchronous on Linux: the line is out before the stop.
        process.kill(process.pid, "SIGSTOP");
        resumed = true;
      }
      const startedAfterResume = resumed;
      const results = await store.arm(batches, nowMs);
      if (startedAfterResume && withClaims.length > 0) {
        line(
          "ARM AFTER RESUME",
          batches.flatMap((b, i) =>
            b.claims.length === 0
              ? []
              : [{ ...describe(b), fenced: results[i]!.fenced, armed: results[i]!.armed.length }],
          ),
        );
      }
      return results;
    },
  };
}

const describe = ({ fence, claims }: ArmBatch) => ({
  shard: fence.shard,
  epoch: fence.epoch,
  ids: claims.map((c) => c.taskId),
});

const config = resolveConfig(process.env);
const logger = createLogger({ level: config.logLevel, name: "dispatch-child" });
const running = await startDispatchRoles(config, systemClock, logger, new Set(["dispatcher"]), {
  wrapStore: stoppingBeforeArm,
});
process.stdout.write(
  `ready ${running.nodeId} roles=dispatcher metrics_port=${running.metricsPort}\n`,
);
process.once("SIGTERM", () => {
  running.stop().then(() => process.exit(0));
});
