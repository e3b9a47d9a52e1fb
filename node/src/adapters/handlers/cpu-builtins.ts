/**
 * Built-in CPU handlers, run inside the piscina pool (cpu-pool.ts):
 *  - spin: {"ms": n} keeps one core busy for n ms, returns {"spun_ms", "iterations"}.
 *    For tests and demos of the pool and its timeout.
 */
export function spin(task: { payload: unknown }): { spun_ms: number; iterations: number } {
  const payload = task.payload as { ms?: unknown } | null;
  const ms = typeof payload?.ms === "number" && payload.ms >= 0 ? payload.ms : 0;
  const until = Date.now() + ms;
  let iterations = 0;
  while (Date.now() < until) iterations++;
  return { spun_ms: ms, iterations };
}
