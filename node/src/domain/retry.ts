/**
 * What happens to a failed attempt (docs/architecture.md section 3: RUNNING → SCHEDULED
 * with a later run_at, or DEAD). Pure: time and randomness are arguments.
 *
 * Backoff, for the n-th failed attempt (n = 1 after the first run):
 *  - exponential: ceiling = min(max_ms, base_ms · 2^(n−1)), and the delay is
 *    drawn uniformly from [ceiling/2, ceiling] ("equal jitter"): retries of
 *    many tasks that failed together spread out, yet none comes back sooner
 *    than half its step — full jitter could retry at once against a
 *    dependency that just failed.
 *  - fixed: base_ms every time, no jitter (the user asked for exactly that).
 * Worked example, base 1000, max 60000: attempt 1 fails → 0.5–1 s, attempt 2
 * → 1–2 s, attempt 3 → 2–4 s, …, attempt 7 and later → 30–60 s.
 */
import type { BackoffPolicy } from "./task.js";

/** A source of uniform numbers in [0, 1): Math.random in production, a fixed sequence in tests. */
export type RandomSource = () => number;

/** The part of a task the retry decision reads. `attempt` counts starts, 1 for the first run. */
export interface RetryState {
  attempt: number;
  maxAttempts: number;
  backoff: BackoffPolicy;
}

export type DeadReason = "exhausted" | "non_retryable" | "lease_expired" | "unknown_type";

export type FailureDecision =
  | { kind: "retry"; delayMs: number; nextRunAtMs: number }
  | { kind: "dead"; reason: DeadReason };

/** Delay before the attempt after `failedAttempt` (≥ 1). */
export function backoffDelayMs(
  policy: BackoffPolicy,
  failedAttempt: number,
  random: RandomSource,
): number {
  if (policy.strategy === "fixed") return policy.baseMs;
  // 2^(n−1) overflows to Infinity for huge n; min() keeps it at max_ms.
  const ceilingMs = Math.min(policy.maxMs, policy.baseMs * 2 ** Math.max(0, failedAttempt - 1));
  const half = ceilingMs / 2;
  return Math.round(half + random() * half);
}

/**
 * Decides an attempt the worker interrupted because it was stopping (its
 * drain timeout passed): not the task's failure, so it runs again at once,
 * and the attempt does not count against max_attempts (the store gives it
 * back), whether or not it was the last.
 */
export const decideInterrupted = (nowMs: number): FailureDecision => ({
  kind: "retry",
  delayMs: 0,
  nextRunAtMs: nowMs,
});

/**
 * Decides a failed attempt: retry while the failure is retryable and
 * attempts remain, else dead. `expired` marks the reconciler's failure of an
 * attempt whose execution lease ran out (so the dead letter says why).
 */
export function decideFailure(
  state: RetryState,
  failure: { retryable: boolean; expired?: boolean },
  nowMs: number,
  random: RandomSource,
): FailureDecision {
  if (!failure.retryable) return { kind: "dead", reason: "non_retryable" };
  if (state.attempt >= state.maxAttempts) {
    return { kind: "dead", reason: failure.expired === true ? "lease_expired" : "exhausted" };
  }
  const delayMs = backoffDelayMs(state.backoff, state.attempt, random);
  return { kind: "retry", delayMs, nextRunAtMs: nowMs + delayMs };
}
