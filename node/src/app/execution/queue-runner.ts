/**
 * The per-message pipeline of one worker queue: parse the envelope, wait
 * for a slot (the tenant's first, then the queue's), run it through the
 * executor. Its answer tells the consumer whether the message's offset may
 * be committed: yes once the outcome is durable or there is nothing to do
 * (a malformed message, a bug that the reconciler will repair), no when the
 * worker stopped before the outcome was durable (the message comes back).
 *
 * Two waits do not count toward the consumer's fetch limit (the message
 * says it is waiting, ports/transport.ts Delivery): one for the tenant's
 * slot, so a tenant at its cap cannot stop the queue for the others, and one
 * for the run_at of an envelope delivered early by the database's clock (a
 * dispatcher whose clock runs ahead), which holds no slot at all meanwhile.
 */
import type { TopicKind } from "../../domain/envelope.js";
import { type EnvelopeRefusal, envelopeOf, parseEnvelope } from "../../domain/inbound-envelope.js";
import type { Delivery, Message } from "../../ports/transport.js";
import type { WorkerMetrics } from "../../ports/worker-metrics.js";
import type { Executor } from "./executor.js";
import type { QueueLimiter } from "./limiter.js";

export interface QueueRunnerDeps {
  queue: TopicKind;
  executor: Executor;
  limiter: QueueLimiter;
  metrics: Pick<WorkerMetrics, "malformed">;
  /** Longer messages are refused unparsed (a dispatcher sends none: CF_KAFKA_MAX_MESSAGE_BYTES). */
  maxEnvelopeChars: number;
  /** A message that is not an envelope: skipped (and committed). */
  onMalformed: (refusal: EnvelopeRefusal, length: number) => void;
  onError: (error: unknown, what: string) => void;
}

/** Returns the consumer's message handler: resolves true when the offset may be committed. */
export function queueRunner(
  deps: QueueRunnerDeps,
): (message: Message, delivery: Delivery) => Promise<boolean> {
  return async (message, delivery) => {
    // An envelope this process's dispatcher built and handed over in memory needs no parse.
    const parsed = message.source
      ? envelopeOf(message.source)
      : parseEnvelope(message.value, deps.maxEnvelopeChars);
    if (!parsed.ok) {
      deps.metrics.malformed(deps.queue, parsed.code);
      deps.onMalformed(parsed, message.value.length);
      return true;
    }
    const { envelope } = parsed;
    const waiting = (isWaiting: boolean) => delivery.waiting(isWaiting);
    try {
      for (;;) {
        const attempt = await deps.limiter.run(
          envelope.tenantId,
          () => deps.executor.executeOnce(envelope, deps.queue),
          waiting,
        );
        if (attempt.report !== "not_due") return attempt.report !== "abandoned";
        waiting(true);
        const due = await deps.executor.untilDue(attempt.dueInMs);
        waiting(false);
        if (!due) return false; // the worker drains: not started, delivered again
      }
    } catch (error) {
      // A bug, not a dependency: report it and move on; the reconciler recovers the task.
      deps.onError(error, `execute ${envelope.taskId}`);
      return true;
    }
  };
}
