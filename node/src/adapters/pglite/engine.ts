/**
 * The embedded Postgres engine: PGlite (Postgres compiled to WebAssembly)
 * on a data directory, in a worker thread of its own (engine-thread.mjs),
 * spoken to in raw protocol bytes.
 *
 * Why a thread: PGlite runs each statement to completion on the thread that
 * calls it. On the main thread, every statement of every role — group
 * commits of thousands of rows, arms, coalesced starts and completions —
 * would stop the event loop for its whole duration, and with it the
 * dispatcher's wheel and the API's answers (`chronofence dev` runs every
 * role in one process). In its own thread, only the copy of the bytes each
 * way is on the main thread. docs/operations.md ("Embedded default") has
 * the measurement.
 *
 * One session: PGlite is a single-user Postgres, so the caller (pool.ts)
 * serialises everything on one connection.
 */
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";

export interface PgliteEngine {
  /** Sends frontend messages; resolves with everything the backend answered to them. */
  exec(bytes: Uint8Array): Promise<Uint8Array>;
  close(): Promise<void>;
}

const THREAD_FILE = "engine-thread.mjs";
const SOURCE_DIR = join("node", "src", "adapters", "pglite");

/** tsc does not copy the .mjs to dist/: from there, walk up to the repository's sources. */
function locateThreadFile(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  const beside = join(dir, THREAD_FILE);
  if (existsSync(beside)) return beside;
  for (;;) {
    const candidate = join(dir, SOURCE_DIR, THREAD_FILE);
    if (existsSync(candidate)) return candidate;
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`${THREAD_FILE} not found`);
    dir = parent;
  }
}

type Reply = { id: number; bytes?: Uint8Array; error?: string };

/**
 * Opens (on first use: creates, which takes seconds) the database in
 * `dataDir`. Rejects if PGlite cannot open it. `onFatal` hears once if the
 * engine dies afterwards — its thread exited, or PGlite itself threw (a SQL
 * error is an answer, not a throw): every later call fails, so the caller
 * should stop; what was committed is in the files.
 */
export async function openPgliteEngine(
  dataDir: string,
  onFatal: (error: Error) => void,
): Promise<PgliteEngine> {
  const worker = new Worker(locateThreadFile(), { workerData: { dataDir } });
  const pending = new Map<
    number,
    { resolve: (b: Uint8Array) => void; reject: (e: Error) => void }
  >();
  let nextId = 0;
  let dead: Error | null = null;
  let closing = false;
  const failAll = (error: Error) => {
    if (!dead && !closing) onFatal(error);
    dead ??= error;
    for (const { reject } of pending.values()) reject(error);
    pending.clear();
  };
  worker.on("error", (error) => failAll(error));
  worker.on("exit", (code) => failAll(new Error(`embedded Postgres thread exited (${code})`)));

  await new Promise<void>((resolve, reject) => {
    const onFirst = (message: { ready?: true; failed?: string }) => {
      worker.off("message", onFirst);
      if (message.ready) return resolve();
      void worker.terminate();
      reject(new Error(`cannot open the embedded Postgres in ${dataDir}: ${message.failed}`));
    };
    worker.on("message", onFirst);
    worker.once("error", reject);
  });
  worker.on("message", (reply: Reply) => {
    const waiter = pending.get(reply.id);
    if (!waiter) return;
    pending.delete(reply.id);
    if (reply.bytes) waiter.resolve(reply.bytes);
    else failAll(new Error(`embedded Postgres failed: ${reply.error}`));
  });

  return {
    exec(bytes) {
      if (dead) return Promise.reject(dead);
      const id = nextId++;
      return new Promise((resolve, reject) => {
        pending.set(id, { resolve, reject });
        worker.postMessage({ id, bytes });
      });
    },
    async close() {
      if (dead) return;
      closing = true;
      await new Promise<void>((resolve) => {
        worker.once("exit", () => resolve());
        worker.on("message", (m: { closed?: true }) => {
          if (m.closed) void worker.terminate();
        });
        worker.postMessage({ close: true });
      });
    },
  };
}
