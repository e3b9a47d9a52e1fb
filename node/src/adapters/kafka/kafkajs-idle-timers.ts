/**
 * kafkajs 2.2.4, its last release, keeps a 1 ms timer going for ever on
 * every broker connection: RequestQueue.scheduleCheckPendingRequests arms a
 * timeout even when nothing is pending and nothing throttled (the delay is
 * then negative, so 1 ms), and the timeout's check calls it again. Every
 * process that talks to Kafka wakes a thousand times a second per
 * connection (kafkajs issues #1556, #1604, #1704; the fixes in pull requests
 * #1667 and #1768 were never released). Importing this module replaces the
 * method with the fix those pull requests agree on: a check is scheduled
 * only while requests are pending (every 10 ms, as before, until a response
 * or the end of a throttle lets them go) or for the end of a throttle.
 * The effect is measured in bench/RESULTS.md (session 13).
 */
import { createRequire } from "node:module";

interface RequestQueue {
  pending: unknown[];
  throttledUntil: number;
  throttleCheckTimeoutId: ReturnType<typeof setTimeout> | null;
  checkPendingRequests(): void;
  scheduleCheckPendingRequests(): void;
}

const CHECK_PENDING_REQUESTS_INTERVAL_MS = 10; // kafkajs' own constant

const require = createRequire(import.meta.url);
const RequestQueueClass: {
  prototype: RequestQueue;
} = require("kafkajs/src/network/requestQueue/index.js");

RequestQueueClass.prototype.scheduleCheckPendingRequests = function (this: RequestQueue) {
  if (this.throttleCheckTimeoutId) return;
  let delayMs = this.throttledUntil - Date.now();
  if (this.pending.length > 0) {
    if (delayMs <= 0) delayMs = CHECK_PENDING_REQUESTS_INTERVAL_MS;
  } else if (delayMs <= 0) {
    return; // nothing waits and nothing is throttled: the next push or response checks again
  }
  this.throttleCheckTimeoutId = setTimeout(() => {
    this.throttleCheckTimeoutId = null;
    this.checkPendingRequests();
  }, delayMs);
};

/** The patched class, for tests. */
export const KafkajsRequestQueue = RequestQueueClass as unknown as new (options: {
  maxInFlightRequests: number | null;
  requestTimeout: number;
  enforceRequestTimeout: boolean;
  clientId: string;
  broker: string;
  logger: unknown;
}) => RequestQueue;
