/**
 * When a Kafka consumer's commits say its group dropped it and kafkajs has
 * not rejoined (adapters/kafka/membership-watch.ts): only not-a-member
 * refusals count, found through kafkajs' wrappers; a rejoin is due once they
 * have lasted longer than the grace; a commit that goes through, or a join,
 * starts the count again.
 */
import { describe, expect, it } from "vitest";
import { MembershipWatch } from "../../../src/adapters/kafka/membership-watch.js";

const protocolError = (type: string) =>
  Object.assign(new Error("The coordinator is not aware of this member"), { type });
/** As kafkajs' retrier wraps what it gave up on. */
const wrapped = (type: string) =>
  Object.assign(new Error("Number of retries exceeded"), { originalError: protocolError(type) });

describe("the membership watch", () => {
  it("asks for a rejoin once not-a-member refusals outlast the grace", () => {
    const watch = new MembershipWatch(12_000);
    expect(watch.commitFailed(protocolError("UNKNOWN_MEMBER_ID"), 1_000)).toBe(false);
    expect(watch.commitFailed(protocolError("UNKNOWN_MEMBER_ID"), 13_000)).toBe(false);
    expect(watch.commitFailed(wrapped("ILLEGAL_GENERATION"), 13_001)).toBe(true);
  });

  it("ignores other failures: a broker away says nothing about membership", () => {
    const watch = new MembershipWatch(1_000);
    for (const at of [0, 5_000, 60_000]) {
      expect(watch.commitFailed(new Error("Connection timeout"), at)).toBe(false);
      expect(watch.commitFailed(protocolError("REQUEST_TIMED_OUT"), at)).toBe(false);
    }
    expect(watch.commitFailed(null, 70_000)).toBe(false);
  });

  it("starts again after a commit goes through or the consumer joins", () => {
    const watch = new MembershipWatch(1_000);
    watch.commitFailed(protocolError("UNKNOWN_MEMBER_ID"), 0);
    watch.member();
    expect(watch.commitFailed(protocolError("UNKNOWN_MEMBER_ID"), 1_500)).toBe(false);
    expect(watch.commitFailed(protocolError("UNKNOWN_MEMBER_ID"), 2_501)).toBe(true);
  });

  it("finds the type through a cause chain", () => {
    const watch = new MembershipWatch(0);
    const outer = new Error("commit failed", { cause: wrapped("UNKNOWN_MEMBER_ID") });
    expect(watch.commitFailed(outer, 0)).toBe(false);
    expect(watch.commitFailed(outer, 1)).toBe(true);
  });
});
