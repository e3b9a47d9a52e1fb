/**
 * The API role as a child process, for tests that kill it. Configured from
 * the environment like the real `chronofence run --roles api`; with
 * CF_TEST_CRASH_AFTER_COMMIT=n it SIGKILLs itself right after the n-th group
 * commit returns, before any of that group's requests is answered. With
 * CF_TEST_HOLD_COMMITS=1, group commits wait until SIGTERM (then run one at a
 * time, after the server has stopped accepting), and each held group prints
 * `HELD <rows so far>`: the test knows its requests are in flight.
 */
import { pino } from "pino";
import { systemClock } from "../../../src/adapters/clock/system-clock.js";
import { resolveConfig } from "../../../src/config/config.js";
import { startApi } from "../../../src/main/api.js";
import type { TaskStore } from "../../../src/ports/task-store.js";

const crashAfter = Number(process.env.CF_TEST_CRASH_AFTER_COMMIT ?? 0);
let commits = 0;

function crashingStore(store: TaskStore): TaskStore {
  return {
    get: (...args) => store.get(...args),
    list: (...args) => store.list(...args),
    cancel: (...args) => store.cancel(...args),
    async insertMany(rows, nowMs) {
      const outcomes = await store.insertMany(rows, nowMs);
      if (++commits === crashAfter) process.kill(process.pid, "SIGKILL");
      return outcomes;
    },
  };
}

let releaseHeld: () => void = () => undefined;
const held = new Promise<void>((resolve) => {
  releaseHeld = resolve;
});

function holdingStore(store: TaskStore): TaskStore {
  let heldRows = 0;
  let queue: Promise<unknown> = Promise.resolve();
  return {
    get: (...args) => store.get(...args),
    list: (...args) => store.list(...args),
    cancel: (...args) => store.cancel(...args),
    async insertMany(rows, nowMs) {
      heldRows += rows.length;
      process.stdout.write(`HELD ${heldRows}\n`);
      await held;
      // One at a time: many held groups must not need many connections.
      const mine = queue.then(() => store.insertMany(rows, nowMs));
      queue = mine.catch(() => undefined);
      return mine;
    },
  };
}

const wrapTaskStore =
  crashAfter > 0 ? crashingStore : process.env.CF_TEST_HOLD_COMMITS ? holdingStore : undefined;
const config = resolveConfig(process.env);
const api = await startApi(config, systemClock, pino({ level: "silent" }), {
  ...(wrapTaskStore && { wrapTaskStore }),
});
process.stdout.write(`LISTENING ${api.port}\n`);
process.once("SIGTERM", () => {
  api.stop().then(() => process.exit(0));
  // After stop() has closed the listening socket (synchronously, before its first await).
  releaseHeld();
});
