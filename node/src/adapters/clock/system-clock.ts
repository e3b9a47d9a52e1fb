import { performance } from "node:perf_hooks";
import type { Clock } from "../../ports/clock.js";

export const systemClock: Clock = {
  nowMs: () => Date.now(),
  monotonicMs: () => performance.now(),
};
