// A user handler module as `--handlers` / CF_WORKER_HANDLERS loads it (plain
// ESM, no build step): one event-loop handler and one CPU handler that runs
// in the worker's piscina pool.
import { threadId } from "node:worker_threads";

export const handlers = {
  "user.echo": async (payload, ctx) => ({ payload, attempt: ctx.attempt, type: ctx.type }),
};

export const cpuHandlers = { "user.burn": "burn" };

/** Keeps a core busy for payload.ms; reports which thread it ran on. */
export function burn({ payload, ctx }) {
  const until = Date.now() + payload.ms;
  let spins = 0;
  while (Date.now() < until) spins++;
  return { threadId, spins: spins > 0, taskId: ctx.taskId };
}
