// The chaos workload's handler module (CF_WORKER_HANDLERS, plain ESM): one
// type, "chaos.run", whose payload says what it does, and which records each
// run outside Chronofence's tables — one JSON line when it starts and one
// when it ends, appended to CHAOS_EXEC_DIR/<CF_NODE_ID>.jsonl with a
// synchronous write, so a kill -9 loses at most the line of a run that had
// not started yet. Without CHAOS_EXEC_DIR (the soak) nothing is recorded.
//
// payload.mode:
//   "succeed" — returns after payload.ms (default 0);
//   "fail"    — throws while ctx.attempt <= payload.fail_attempts (always if
//               absent), then succeeds: retries and dead letters;
//   "slow"    — as succeed, for longer (seconds), honouring ctx.signal.
// Start lines: {e:"start", task, token, attempt, node, at}; end lines:
// {e:"end", task, token, at, outcome: "ok" | "threw" | "aborted"}. Times are
// the machine's clock (Date.now()), never the node's injected one.
import { appendFileSync } from "node:fs";
import path from "node:path";

const dir = process.env.CHAOS_EXEC_DIR;
const node = process.env.CF_NODE_ID ?? `pid-${process.pid}`;
const file = dir ? path.join(dir, `${node}.jsonl`) : null;

function record(line) {
  if (file) appendFileSync(file, `${JSON.stringify(line)}\n`);
}

function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        reject(signal.reason);
      },
      { once: true },
    );
  });
}

async function work(payload, ctx) {
  const p = payload ?? {};
  if (p.mode === "fail") {
    const failAttempts = typeof p.fail_attempts === "number" ? p.fail_attempts : Infinity;
    if (ctx.attempt <= failAttempts) {
      throw Object.assign(new Error(`chaos: planned failure, attempt ${ctx.attempt}`), {
        code: "chaos_planned",
      });
    }
  }
  if (typeof p.ms === "number" && p.ms > 0) await sleep(p.ms, ctx.signal);
  return { attempt: ctx.attempt, node };
}

export const handlers = {
  "chaos.run": async (payload, ctx) => {
    const base = { task: ctx.taskId, token: ctx.fencingToken };
    record({ e: "start", ...base, attempt: ctx.attempt, node, at: Date.now() });
    try {
      const result = await work(payload, ctx);
      record({ e: "end", ...base, at: Date.now(), outcome: "ok" });
      return result;
    } catch (error) {
      const outcome = ctx.signal.aborted ? "aborted" : "threw";
      record({ e: "end", ...base, at: Date.now(), outcome });
      throw error;
    }
  },
};
