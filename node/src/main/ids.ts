import { randomFillSync } from "node:crypto";
import { V7Generator } from "uuidv7";
import type { Clock } from "../ports/clock.js";

/** UUIDv7 ids stamped by the injected clock (monotonic even if the clock steps back ≤ 10 s). */
export function uuidv7From(clock: Clock): () => string {
  const generator = new V7Generator(bufferedRandom(1024));
  return () => generator.generateOrResetCore(clock.nowMs(), 10_000).toString();
}

/**
 * Cryptographically strong 32-bit values, drawn `size` at a time: uuidv7's
 * own source draws 8 at a time, and each draw is a call into Node's crypto
 * binding that cost more than the id itself (about 1 µs per id at 5,000
 * tasks/s, bench/RESULTS.md session 26).
 */
function bufferedRandom(size: number): { nextUint32(): number } {
  const buffer = new Uint32Array(size);
  let cursor = size;
  return {
    nextUint32() {
      if (cursor === size) {
        randomFillSync(buffer);
        cursor = 0;
      }
      return buffer[cursor++]!;
    },
  };
}
