/**
 * Loaded into a role with `--import` (BENCH_HEAP_PROFILE_DIR=dir): samples
 * every allocation, including the objects the garbage collector has since
 * freed, and writes the profile (Chrome DevTools' .heapprofile) there when
 * the process exits. Node's own --heap-prof keeps only the objects still
 * alive at the end, which says nothing of the short-lived garbage that makes
 * a role's collector busy.
 *
 * BENCH_HEAP_SURVIVORS=1 leaves out what a scavenge freed: the profile then
 * holds what survived the young generation (what each scavenge copies, and
 * so what sets its pause) and what V8 allocated in the old generation to
 * begin with (pretenured sites, which no scavenge sees), by allocation site.
 * Its file is survivors-<pid>.heapprofile.
 */
import { writeFileSync } from "node:fs";
import inspector from "node:inspector";
import path from "node:path";

const dir = process.env.BENCH_HEAP_PROFILE_DIR;
const survivorsOnly = process.env.BENCH_HEAP_SURVIVORS === "1";
if (dir) {
  const session = new inspector.Session();
  session.connect();
  session.post("HeapProfiler.startSampling", {
    samplingInterval: 16_384,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: !survivorsOnly,
  });
  // A same-thread session answers synchronously, so this works in an exit handler.
  process.on("exit", () => {
    session.post("HeapProfiler.stopSampling", (error, result) => {
      if (error) return;
      const file = path.join(
        dir,
        `${survivorsOnly ? "survivors" : "heap"}-${process.pid}.heapprofile`,
      );
      writeFileSync(file, JSON.stringify(result.profile));
    });
  });
}
