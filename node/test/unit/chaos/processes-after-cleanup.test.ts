/**
 * Nothing of a chaos run may start once its cleanup has begun (found when a
 * run was stopped with SIGTERM while its topology was starting: four
 * dispatch processes spawned by a start still retrying outlived the run as
 * orphans, connected to services that no longer existed).
 */
import os from "node:os";
import { describe, expect, it } from "vitest";
import { cleanupStarted, undoAll } from "../../../../bench/chaos/cleanup.js";
import { ManagedProcess } from "../../../../bench/chaos/processes.js";

describe("ManagedProcess after the run's cleanup began", () => {
  it("refuses to start, spawning nothing", async () => {
    const crashes: unknown[] = [];
    const process = new ManagedProcess({
      name: "dispatch-1",
      kind: "dispatch",
      node: 1,
      args: ["run", "--roles", "dispatcher"],
      env: () => ({}),
      logDir: os.tmpdir(),
      onCrash: (crash) => crashes.push(crash),
    });
    expect(cleanupStarted()).toBe(false);
    await undoAll();
    expect(cleanupStarted()).toBe(true);
    await expect(process.start(10_000)).rejects.toThrow(/not started, the run is stopping/);
    expect(process.pid).toBeUndefined();
    expect(process.alive).toBe(false);
    expect(crashes).toEqual([]);
  });
});
