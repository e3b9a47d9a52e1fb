import { describe, expect, it } from "vitest";
import {
  classifyFailure,
  PermanentError,
  unknownTypeFailure,
} from "../../../src/domain/execution-error.js";
import { backoffDelayMs, decideFailure } from "../../../src/domain/retry.js";
import type { BackoffPolicy } from "../../../src/domain/task.js";

const exponential: BackoffPolicy = { strategy: "exponential", baseMs: 1000, maxMs: 60_000 };
const low = () => 0;
const high = () => 0.999_999;

describe("backoffDelayMs", () => {
  it("doubles the ceiling per attempt and jitters within its upper half", () => {
    expect(backoffDelayMs(exponential, 1, low)).toBe(500);
    expect(backoffDelayMs(exponential, 1, high)).toBe(1000);
    expect(backoffDelayMs(exponential, 2, low)).toBe(1000);
    expect(backoffDelayMs(exponential, 3, high)).toBe(4000);
    expect(backoffDelayMs(exponential, 3, () => 0.5)).toBe(3000);
  });

  it("never exceeds max_ms, even for absurd attempt numbers", () => {
    expect(backoffDelayMs(exponential, 7, high)).toBe(60_000);
    expect(backoffDelayMs(exponential, 7, low)).toBe(30_000);
    expect(backoffDelayMs(exponential, 5000, high)).toBe(60_000);
  });

  it("fixed is base_ms every time, without jitter", () => {
    const fixed: BackoffPolicy = { strategy: "fixed", baseMs: 250, maxMs: 60_000 };
    expect(backoffDelayMs(fixed, 1, low)).toBe(250);
    expect(backoffDelayMs(fixed, 9, high)).toBe(250);
  });
});

describe("decideFailure", () => {
  const nowMs = 1_700_000_000_000;
  const state = (attempt: number, maxAttempts = 3) => ({
    attempt,
    maxAttempts,
    backoff: exponential,
  });

  it("retries a retryable failure while attempts remain, at now + backoff", () => {
    expect(decideFailure(state(1), { retryable: true }, nowMs, low)).toEqual({
      kind: "retry",
      delayMs: 500,
      nextRunAtMs: nowMs + 500,
    });
    expect(decideFailure(state(2), { retryable: true }, nowMs, high)).toMatchObject({
      kind: "retry",
      nextRunAtMs: nowMs + 2000,
    });
  });

  it("is dead when attempts are exhausted, or at once when not retryable", () => {
    expect(decideFailure(state(3), { retryable: true }, nowMs, low)).toEqual({
      kind: "dead",
      reason: "exhausted",
    });
    expect(decideFailure(state(1), { retryable: false }, nowMs, low)).toEqual({
      kind: "dead",
      reason: "non_retryable",
    });
    expect(decideFailure(state(1, 1), { retryable: true, expired: true }, nowMs, low)).toEqual({
      kind: "dead",
      reason: "lease_expired",
    });
  });

  it("a replayed task past its budget dies on its next failure", () => {
    expect(decideFailure(state(4), { retryable: true }, nowMs, low).kind).toBe("dead");
  });
});

describe("classifyFailure", () => {
  it("treats failures as retryable unless the handler says otherwise", () => {
    expect(classifyFailure(new Error("boom"))).toEqual({ message: "boom", retryable: true });
    expect(classifyFailure(new PermanentError("bad input", { code: "bad" }))).toEqual({
      message: "bad input",
      code: "bad",
      retryable: false,
    });
    const flagged = Object.assign(new Error("no"), { retryable: false, code: "E_NO" });
    expect(classifyFailure(flagged)).toEqual({ message: "no", code: "E_NO", retryable: false });
  });

  it("keeps the name of a typed error as its code, and survives non-errors", () => {
    expect(classifyFailure(new TypeError("x is undefined")).code).toBe("TypeError");
    expect(classifyFailure("plain string")).toEqual({
      message: "plain string",
      code: "non_error_thrown",
      retryable: true,
    });
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    expect(classifyFailure(circular).retryable).toBe(true);
  });

  it("truncates long messages and refuses unknown types for good", () => {
    expect(classifyFailure(new Error("x".repeat(5000))).message.length).toBeLessThan(2100);
    expect(unknownTypeFailure("nope")).toMatchObject({ code: "unknown_type", retryable: false });
  });
});
