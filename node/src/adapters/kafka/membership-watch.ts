/**
 * Notices a consumer whose group no longer counts it as a member while
 * kafkajs goes on fetching instead of rejoining: every offset commit is then
 * refused (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION) and nothing else happens,
 * so the worker serves that queue with one member fewer for good while it
 * looks healthy (docs/evidence.md, F2: seen under heavy load, not reproduced
 * on demand). kafkajs rejoins on its own within a heartbeat of an eviction
 * it notices; refusals that last longer than `graceMs` mean it did not, and
 * the consumer is stopped and started again, as after a crash.
 */
const NOT_A_MEMBER = new Set(["UNKNOWN_MEMBER_ID", "ILLEGAL_GENERATION"]);

/** The broker's error type, through kafkajs' wrappers (cause, originalError). */
function errorTypeOf(error: unknown, depth = 0): string | null {
  if (typeof error !== "object" || error === null || depth > 5) return null;
  const e = error as { type?: unknown; cause?: unknown; originalError?: unknown };
  if (typeof e.type === "string" && NOT_A_MEMBER.has(e.type)) return e.type;
  return errorTypeOf(e.cause, depth + 1) ?? errorTypeOf(e.originalError, depth + 1);
}

export class MembershipWatch {
  private refusedSinceMs: number | null = null;

  constructor(private readonly graceMs: number) {}

  /**
   * A commit failed. True once commits have been refused as not-a-member
   * for longer than the grace (other failures, a broker away, say nothing
   * about membership and change nothing).
   */
  commitFailed(error: unknown, nowMs: number): boolean {
    if (errorTypeOf(error) === null) return false;
    this.refusedSinceMs ??= nowMs;
    return nowMs - this.refusedSinceMs > this.graceMs;
  }

  /** A commit went through, or the consumer (re)joined: a member. */
  member(): void {
    this.refusedSinceMs = null;
  }
}
