/**
 * The per-message pipeline of one worker queue: parse the envelope, wait
 * for a slot (the tenant's first, then the queue's), run it through the
 * executor. Its answer tells the consumer whether the message's offset may
 * be committed: yes once the outcome is durable or there is nothing to do
 * (a malformed message, a bug that the reconciler will repair), no when the
 * worker stopped before the outcome was durable (the message comes back).
 */
import type { TopicKind } from "../../domain/envelope.js";
import { parseEnvelope } from "../../domain/inbound-envelope.js";
import type { WorkerMetrics } from "../../ports/worker-metrics.js";
import type { Executor } from "./executor.js";
import type { QueueLimiter } from "./limiter.js";

export interface QueueRunnerDeps {
  queue: TopicKind;
  executor: Executor;
  limiter: QueueLimiter;
  metrics: Pick<WorkerMetrics, "malformed">;
  /** A message that is not an envelope: skipped (and committed). */
  onMalformed: (reason: string) => void;
  onError: (error: unknown, what: string) => void;
}

/** Returns the consumer's message handler: resolves true when the offset may be committed. */
export function queueRunner(deps: QueueRunnerDeps): (message: string) => Promise<boolean> {
  return async (message) => {
    const parsed = parseEnvelope(message);
    if (!parsed.ok) {
      deps.metrics.malformed(deps.queue);
      deps.onMalformed(parsed.reason);
      return true;
    }
    const { envelope } = parsed;
    try {
      const report = await deps.limiter.run(envelope.tenantId, () =>
        deps.executor.execute(envelope, deps.queue),
      );
      return report !== "abandoned";
    } catch (error) {
      // A bug, not a dependency: report it and move on; the reconciler recovers the task.
      deps.onError(error, `execute ${envelope.taskId}`);
      return true;
    }
  };
}
