/**
 * CPU-bound handlers run in a piscina thread pool, so they never block the
 * worker's event loop (heartbeats, Kafka, other tasks keep going). A CPU
 * handler is an export of a module; the worker thread calls it with
 * `{ payload, ctx }` (ctx without the signal: it cannot cross threads). At the
 * task's timeout piscina aborts the call and terminates the thread running
 * it — a runaway computation is stopped, not merely ignored.
 */
import { fileURLToPath } from "node:url";
import { Piscina } from "piscina";
import type { Handler, HandlerContext } from "../../ports/handler.js";

export class CpuPool {
  private readonly pool: Piscina;

  constructor(threads: number) {
    this.pool = new Piscina({ maxThreads: threads, minThreads: 0, idleTimeout: 30_000 });
  }

  /** A handler that runs `exportName` of the module at `filename` in the pool. */
  handler(filename: string, exportName: string): Handler {
    return (payload, ctx) =>
      this.pool.run(
        { payload, ctx: plainContext(ctx) },
        { filename, name: exportName, signal: ctx.signal },
      );
  }

  async close(): Promise<void> {
    await this.pool.destroy();
  }
}

/** The built-in CPU handlers (cpu-builtins.ts, compiled next to this file). */
export const CPU_BUILTINS_FILE = fileURLToPath(new URL("./cpu-builtins.js", import.meta.url));

function plainContext(ctx: HandlerContext): Omit<HandlerContext, "signal"> {
  const { signal: _signal, ...plain } = ctx;
  return plain;
}
