import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { describe, expect, it, vi } from "vitest";
import { loopTimerDriver, mainThreadDriver } from "../../src/timing/main-thread-driver.js";
import { Timers } from "../../src/timing/timers.js";
import type { WakeDriverFactory } from "../../src/timing/wake-driver.js";
import { workerThreadDriver } from "../../src/timing/worker-thread-driver.js";

/** A driver the test winds by hand, with a clock that moves only when told. */
function manualTime(startMs = 1_000_000) {
  let nowMs = startMs;
  let wake: (() => void) | undefined;
  let requestedMs: number | null = null;
  const driver: WakeDriverFactory = (onWake) => {
    wake = onWake;
    return {
      wakeAt: (atMs) => {
        requestedMs = atMs;
      },
      close: () => {
        wake = undefined;
      },
    };
  };
  return {
    driver,
    preciseNowMs: () => nowMs,
    wallNowMs: () => nowMs,
    get requestedMs() {
      return requestedMs;
    },
    /** Moves the clock to each requested wake up to `targetMs`, waking the loop each time. */
    runUntil(targetMs: number) {
      while (requestedMs !== null && requestedMs <= targetMs && wake) {
        nowMs = Math.max(nowMs, requestedMs);
        requestedMs = null;
        wake();
      }
      nowMs = Math.max(nowMs, targetMs);
    },
  };
}

describe("Timers with a driven clock", () => {
  it("fires in due order, never before the due instant, with the arguments given", () => {
    const time = manualTime();
    const timers = new Timers(time);
    const fired: [string, number][] = [];
    const record = (label: string) => fired.push([label, time.preciseNowMs()]);
    timers.setTimeout(record, 30.25, "c");
    timers.setTimeout(record, 10, "a");
    timers.setTimeout(record, 10.5, "b");
    timers.at(1_000_000 + 5_000, record, "d");
    time.runUntil(1_000_000 + 6_000);
    expect(fired.map(([label]) => label)).toEqual(["a", "b", "c", "d"]);
    expect(fired.map(([, atMs]) => atMs - 1_000_000)).toEqual([10, 10.5, 30.25, 5_000]);
    expect(timers.size).toBe(0);
  });

  it("cancel() stops a timer, and answers false once it fired or was cancelled", () => {
    const time = manualTime();
    const timers = new Timers(time);
    const callback = vi.fn();
    const cancelled = timers.setTimeout(callback, 20);
    const kept = timers.setTimeout(callback, 40);
    expect(cancelled.cancel()).toBe(true);
    expect(cancelled.cancel()).toBe(false);
    time.runUntil(1_000_000 + 100);
    expect(callback).toHaveBeenCalledTimes(1);
    expect(kept.cancel()).toBe(false);
  });

  it("cancels a timer already taken into the sub-millisecond imminent list", () => {
    const time = manualTime();
    const timers = new Timers(time);
    const callback = vi.fn();
    const first = timers.setTimeout(callback, 5.2);
    const second = timers.setTimeout(callback, 5.7);
    time.runUntil(1_000_000 + 5.2); // fires the first, takes the second into the imminent list
    expect(first.pending).toBe(false);
    expect(second.cancel()).toBe(true);
    time.runUntil(1_000_000 + 50);
    expect(callback).toHaveBeenCalledTimes(1);
  });

  it("keeps firing when a callback throws, and reports the error", () => {
    const time = manualTime();
    const errors: unknown[] = [];
    const timers = new Timers({ ...time, onError: (error) => errors.push(error) });
    const after = vi.fn();
    timers.setTimeout(() => {
      throw new Error("boom");
    }, 1);
    timers.setTimeout(after, 1);
    time.runUntil(1_000_000 + 10);
    expect(after).toHaveBeenCalledOnce();
    expect(errors).toEqual([new Error("boom")]);
  });

  it("close() cancels everything and refuses new timers", () => {
    const time = manualTime();
    const timers = new Timers(time);
    const callback = vi.fn();
    const timer = timers.setTimeout(callback, 10);
    timers.close();
    time.runUntil(1_000_000 + 100);
    expect(callback).not.toHaveBeenCalled();
    expect(timer.cancel()).toBe(false);
    expect(() => timers.setTimeout(callback, 1)).toThrow(/closed/);
  });

  it("a callback can cancel a timer of its own batch: it does not fire, and nothing else is lost", () => {
    const time = manualTime();
    const timers = new Timers(time);
    const fired: string[] = [];
    let b: ReturnType<typeof timers.setTimeout> | undefined;
    timers.setTimeout(() => {
      fired.push("a");
      expect(b!.cancel()).toBe(true);
    }, 10);
    b = timers.setTimeout(() => fired.push("b"), 10);
    timers.setTimeout(() => fired.push("c"), 10.5);
    const d = timers.setTimeout(() => fired.push("d"), 10.7);
    time.runUntil(1_000_000 + 20);
    expect(fired).toEqual(["a", "c", "d"]);
    expect(d.pending).toBe(false);
    expect(timers.size).toBe(0);
  });

  it("keeps firing when the error handler itself throws", () => {
    const time = manualTime();
    const timers = new Timers({
      ...time,
      onError: () => {
        throw new Error("handler broke");
      },
    });
    const spy = vi.spyOn(console, "error").mockImplementation(() => {});
    const after = vi.fn();
    timers.setTimeout(() => {
      throw new Error("boom");
    }, 1);
    timers.setTimeout(after, 1);
    timers.setTimeout(after, 5);
    time.runUntil(1_000_000 + 10);
    expect(after).toHaveBeenCalledTimes(2);
    expect(spy).toHaveBeenCalled();
    spy.mockRestore();
  });

  it("close() inside a callback stops the rest of its batch", () => {
    const time = manualTime();
    const timers = new Timers(time);
    const later = vi.fn();
    timers.setTimeout(() => timers.close(), 10);
    const sameBatch = timers.setTimeout(later, 10);
    time.runUntil(1_000_000 + 20);
    expect(later).not.toHaveBeenCalled();
    expect(sameBatch.pending).toBe(false);
    expect(sameBatch.cancel()).toBe(false);
  });

  it("runs timers scheduled by a callback in a later batch, after those already due", () => {
    const time = manualTime();
    const timers = new Timers(time);
    const fired: string[] = [];
    timers.setTimeout(() => {
      fired.push("x");
      timers.setTimeout(() => fired.push("z"), 0);
    }, 10);
    timers.setTimeout(() => fired.push("y"), 10);
    time.runUntil(1_000_000 + 20);
    expect(fired).toEqual(["x", "y", "z"]);
  });

  it("tells the driver when nothing is left to wait for", () => {
    const time = manualTime();
    const timers = new Timers(time);
    timers.setTimeout(() => {}, 10);
    expect(time.requestedMs).not.toBeNull();
    time.runUntil(1_000_000 + 20);
    expect(time.requestedMs).toBeNull();
  });

  it("treats a negative or invalid delay as zero, like Node", () => {
    const time = manualTime();
    const timers = new Timers(time);
    const callback = vi.fn();
    timers.setTimeout(callback, -5);
    timers.setTimeout(callback, Number.NaN);
    time.runUntil(1_000_000);
    expect(callback).toHaveBeenCalledTimes(2);
  });
});

describe.each([
  ["worker-thread driver", workerThreadDriver],
  ["main-thread driver", mainThreadDriver],
  ["loop-timer driver", loopTimerDriver],
])("Timers on the real clock with the %s", (_name, driver) => {
  it("fires timers in order and no earlier than asked", async () => {
    const realNowMs = () => performance.timeOrigin + performance.now();
    const startMs = realNowMs();
    // The clock stands still while the four are scheduled: on a loaded machine the calls
    // themselves can take longer than the delays between them.
    let scheduling = true;
    const timers = new Timers({ driver, preciseNowMs: () => (scheduling ? startMs : realNowMs()) });
    const fired: { label: number; atMs: number }[] = [];
    await new Promise<void>((resolve) => {
      for (const delayMs of [25, 5, 15, 0]) {
        timers.setTimeout(() => {
          fired.push({
            label: delayMs,
            atMs: realNowMs() - startMs,
          });
          if (fired.length === 4) resolve();
        }, delayMs);
      }
      scheduling = false;
    });
    timers.close();
    expect(fired.map((f) => f.label)).toEqual([0, 5, 15, 25]);
    for (const f of fired) expect(f.atMs).toBeGreaterThanOrEqual(f.label);
  });
});

describe.each([
  ["main-thread driver", mainThreadDriver],
  ["loop-timer driver", loopTimerDriver],
])("the %s", (_name, driver) => {
  it("never runs a callback inside setTimeout()", async () => {
    const timers = new Timers({ driver });
    let returned = false;
    let firedAfterReturn: boolean | undefined;
    await new Promise<void>((resolve) => {
      timers.setTimeout(() => {
        firedAfterReturn = returned;
        resolve();
      }, 0);
      returned = true;
    });
    timers.close();
    expect(firedAfterReturn).toBe(true);
  });
});

describe("the loop-timer driver", () => {
  const realNowMs = () => performance.timeOrigin + performance.now();

  it("wakes once, for the last request only, and not before it", async () => {
    const wakes: number[] = [];
    let woke: () => void = () => undefined;
    const firstWake = new Promise<void>((resolve) => {
      woke = resolve;
    });
    const driver = loopTimerDriver(() => {
      wakes.push(realNowMs());
      woke();
    });
    const startMs = realNowMs();
    driver.wakeAt(startMs + 5);
    driver.wakeAt(startMs + 15);
    await firstWake;
    // Long enough for a second wake, had the first request been kept beside the second.
    await new Promise((resolve) => setTimeout(resolve, 30));
    driver.close();
    expect(wakes).toHaveLength(1);
    expect(wakes[0]! - startMs).toBeGreaterThanOrEqual(15);
  });

  it("does not wake after a request for none, nor after close()", async () => {
    let wakes = 0;
    const cancelled = loopTimerDriver(() => wakes++);
    cancelled.wakeAt(realNowMs() + 5);
    cancelled.wakeAt(null);
    const closed = loopTimerDriver(() => wakes++);
    closed.wakeAt(realNowMs() + 5);
    closed.close();
    closed.wakeAt(realNowMs() + 5);
    await new Promise((resolve) => setTimeout(resolve, 40));
    cancelled.close();
    expect(wakes).toBe(0);
  });

  it("waits for an instant past Node's longest timeout without a warning", () => {
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on("warning", onWarning);
    const driver = loopTimerDriver(() => {
      throw new Error("must not wake");
    });
    driver.wakeAt(realNowMs() + 2 ** 33);
    driver.close();
    return new Promise<void>((resolve) =>
      setImmediate(() => {
        process.off("warning", onWarning);
        expect(warnings).toEqual([]);
        resolve();
      }),
    );
  });
});

describe("process lifetime", () => {
  it("does not keep the process alive after close()", () => {
    const entry = new URL("../../../dist/node/src/entries/chronofence.js", import.meta.url);
    expect(existsSync(entry), "run `npm run build` first").toBe(true);
    const script = `
      import { Timers, loopTimerDriver, mainThreadDriver, workerThreadDriver } from ${JSON.stringify(entry.href)};
      for (const driver of [undefined, workerThreadDriver, mainThreadDriver, loopTimerDriver]) {
        const timers = new Timers(driver ? { driver } : {});
        timers.setTimeout(() => console.log("should not fire"), 60_000);
        timers.close();
      }
    `;
    const result = spawnSync(process.execPath, ["--input-type=module", "-e", script], {
      timeout: 10_000,
    });
    expect(result.error).toBeUndefined();
    expect(result.status).toBe(0);
    expect(result.stdout.toString()).toBe("");
  });
  it("lets the process exit once the last timer fired, without close(), with every driver", () => {
    const entry = new URL("../../../dist/node/src/entries/chronofence.js", import.meta.url);
    const script = `
      import { Timers, loopTimerDriver, mainThreadDriver, workerThreadDriver } from ${JSON.stringify(entry.href)};
      for (const driver of [workerThreadDriver, mainThreadDriver, loopTimerDriver]) {
        new Timers({ driver }).setTimeout(() => console.log("fired"), 20);
      }
    `;
    const result = spawnSync(process.execPath, ["--input-type=module", "-e", script], {
      timeout: 10_000,
    });
    expect(result.error).toBeUndefined();
    expect(result.stderr.toString()).toBe("");
    expect(result.status).toBe(0);
    expect(result.stderr.toString()).toBe("");
    expect(result.stdout.toString()).toBe("fired\nfired\nfired\n");
  });
});
