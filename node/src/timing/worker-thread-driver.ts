import { Worker } from "node:worker_threads";
import type { WakeDriver } from "./wake-driver.js";

/**
 * Wakes from a sleeper thread: it blocks in Atomics.wait until the requested
 * instant (sub-millisecond timeouts, woken early when the request changes),
 * then posts one message to the owning thread, whose event loop runs the wake.
 *
 * Shared state: Int32 [0] = request sequence (bumped on every change),
 * Int32 [1] = 1 when closed, Float64 [1] = requested instant (Infinity: none).
 */
const SLEEPER_SOURCE = `
const { workerData, parentPort } = require("node:worker_threads");
const { performance } = require("node:perf_hooks");
const ints = new Int32Array(workerData);
const floats = new Float64Array(workerData);
for (;;) {
  const sequence = Atomics.load(ints, 0);
  if (Atomics.load(ints, 1) === 1) break;
  const remainingMs = floats[1] - (performance.timeOrigin + performance.now());
  if (remainingMs <= 0) {
    parentPort.postMessage(sequence);
    Atomics.wait(ints, 0, sequence);
  } else if (remainingMs === Infinity) {
    Atomics.wait(ints, 0, sequence);
  } else {
    Atomics.wait(ints, 0, sequence, remainingMs);
  }
}
`;

export function workerThreadDriver(onWake: () => void): WakeDriver {
  const shared = new SharedArrayBuffer(16);
  const ints = new Int32Array(shared);
  const floats = new Float64Array(shared);
  floats[1] = Number.POSITIVE_INFINITY;
  // No inherited execArgv: a host run with --input-type=module would make the CommonJS source fail.
  const worker = new Worker(SLEEPER_SOURCE, { eval: true, workerData: shared, execArgv: [] });
  worker.unref();
  let referenced = false;
  let closed = false;

  worker.on("message", (sequence: number) => {
    // A wake for a request that has since changed is stale: the sleeper is already on the new one.
    if (!closed && sequence === Atomics.load(ints, 0)) onWake();
  });
  worker.on("error", (error) => {
    if (!closed) throw error;
  });

  const request = (atMs: number) => {
    floats[1] = atMs;
    Atomics.add(ints, 0, 1);
    Atomics.notify(ints, 0);
  };

  return {
    wakeAt(atMs) {
      if (closed) return;
      // The sleeper thread never keeps the process alive; a pending wake does, as a libuv timer would.
      const wantRef = atMs !== null;
      if (wantRef !== referenced) {
        if (wantRef) worker.ref();
        else worker.unref();
        referenced = wantRef;
      }
      request(atMs ?? Number.POSITIVE_INFINITY);
    },
    close() {
      if (closed) return;
      closed = true;
      Atomics.store(ints, 1, 1);
      request(Number.POSITIVE_INFINITY);
      worker.unref();
      void worker.terminate();
    },
  };
}
