/**
 * What a harness run must undo whatever happens: every service, process and
 * temporary directory it started registers its own undo here, and `undoAll`
 * runs them newest first — at the end of the run, on an error, and on SIGINT
 * or SIGTERM (the first signal undoes and exits; a second one exits at once).
 * The services of a chaos run are its own (bench/chaos/services.ts), so
 * nothing here ever touches the machine's shared Postgres, Redis or Kafka.
 */

type Undo = () => Promise<void> | void;

const undos: Array<{ what: string; undo: Undo }> = [];
let signalled = false;
let undoing = false;

/**
 * True once `undoAll` has begun: from then on nothing may be started (a
 * supervisor restarting a process, a start still retrying), or it would
 * outlive the run as an orphan with nothing left to stop it.
 */
export function cleanupStarted(): boolean {
  return undoing;
}

/** Registers `undo`; the returned function runs it now (once) and forgets it. */
export function onCleanup(what: string, undo: Undo): () => Promise<void> {
  const entry = { what, undo };
  undos.push(entry);
  return async () => {
    const at = undos.indexOf(entry);
    if (at < 0) return;
    undos.splice(at, 1);
    await entry.undo();
  };
}

/** Runs every registered undo, newest first; one that fails is reported and the rest still run. */
export async function undoAll(): Promise<void> {
  undoing = true;
  while (undos.length > 0) {
    const { what, undo } = undos.pop()!;
    try {
      await undo();
    } catch (error) {
      process.stderr.write(`cleanup: ${what} failed: ${(error as Error).message}\n`);
    }
  }
}

/** SIGINT/SIGTERM: undo everything, then exit 130; a second signal exits at once. */
export function undoOnSignals(): void {
  const handle = (signal: NodeJS.Signals) => {
    if (signalled) process.exit(130);
    signalled = true;
    process.stderr.write(`${signal}: stopping the run's processes and services\n`);
    undoAll().finally(() => process.exit(130));
  };
  process.on("SIGINT", handle);
  process.on("SIGTERM", handle);
}
