/**
 * The worker thread that owns the embedded Postgres (PGlite): it opens the
 * data directory, then answers each request of the main thread — raw
 * frontend-protocol bytes — with the backend's raw answer, one at a time, in
 * order (engine.ts is the other end). Plain JavaScript, not TypeScript, so
 * that Node runs it as it is from the sources (tests) and from dist/; found
 * as the Lua scripts are (engine.ts, locate()).
 *
 *   workerData: { dataDir }
 *   in:  { id, bytes: Uint8Array } | { close: true }
 *   out: { ready: true } | { failed: message } once; then { id, bytes } | { id, error: message };
 *        { closed: true } after close
 */
import { parentPort, workerData } from "node:worker_threads";
import { PGlite } from "@electric-sql/pglite";

let db;
try {
  db = new PGlite(workerData.dataDir);
  await db.waitReady;
  parentPort.postMessage({ ready: true });
} catch (error) {
  parentPort.postMessage({ failed: String(error?.message ?? error) });
}

parentPort.on("message", async (message) => {
  if (message.close) {
    await db?.close().catch(() => undefined);
    parentPort.postMessage({ closed: true });
    return;
  }
  try {
    // Synchronous: this thread has nothing else to do, and no await can interleave another request.
    const answer = db.execProtocolRawSync(message.bytes);
    // A copy the main thread owns: PGlite's answer may be a view into its own memory.
    const bytes = new Uint8Array(answer);
    parentPort.postMessage({ id: message.id, bytes }, [bytes.buffer]);
  } catch (error) {
    parentPort.postMessage({ id: message.id, error: String(error?.message ?? error) });
  }
});
