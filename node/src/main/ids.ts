import { V7Generator } from "uuidv7";
import type { Clock } from "../ports/clock.js";

/** UUIDv7 ids stamped by the injected clock (monotonic even if the clock steps back ≤ 10 s). */
export function uuidv7From(clock: Clock): () => string {
  const generator = new V7Generator();
  return () => generator.generateOrResetCore(clock.nowMs(), 10_000).toString();
}
