/**
 * The API role as a child process, for tests that kill it. Configured from
 * the environment like the real `chronofence run --roles api`; with
 * CF_TEST_CRASH_AFTER_COMMIT=n it SIGKILLs itself right after the n-th group
 * commit returns, before any of that group's requests is answered.
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

const config = resolveConfig(process.env);
const api = await startApi(config, systemClock, pino({ level: "silent" }), {
  ...(crashAfter > 0 && { wrapTaskStore: crashingStore }),
});
process.stdout.write(`LISTENING ${api.port}\n`);
process.once("SIGTERM", () => {
  api.stop().then(() => process.exit(0));
});
