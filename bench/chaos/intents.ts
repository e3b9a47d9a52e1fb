/**
 * How the workload asks for each intent (history.ts `Intent`) in a task body,
 * for handlers.mjs to act out: the payload's mode, enough attempts that the
 * nemesis cannot use them up for a task meant to succeed (a kill or a pause
 * costs an attempt), and two attempts for one meant to die.
 */
import type { Intent } from "./history.js";
import type { Random } from "./random.js";

export const BACKOFF = { strategy: "fixed", base_ms: 200, max_ms: 2000 } as const;

export function taskBody(random: Random, intent: Intent): Record<string, unknown> {
  switch (intent) {
    case "succeed":
      return { payload: { mode: "succeed", ms: random.int(0, 30) }, max_attempts: 10 };
    case "fail_then_succeed": {
      const failAttempts = random.int(1, 2);
      return {
        payload: { mode: "fail", fail_attempts: failAttempts },
        max_attempts: failAttempts + 8,
      };
    }
    case "fail_always":
      return { payload: { mode: "fail" }, max_attempts: 2 };
    case "slow":
      return {
        payload: { mode: "slow", ms: random.int(2000, 6000) },
        max_attempts: 10,
        timeout_ms: 30_000,
      };
  }
}

export const drawIntent = (random: Random): Intent =>
  random.weighted({ succeed: 70, fail_then_succeed: 12, fail_always: 8, slow: 10 });
