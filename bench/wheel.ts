/**
 * bench:wheel — the Wasm timing wheel against Node's setTimeout and a plain
 * TypeScript wheel, in one run on one machine.
 *
 *   npm run bench:wheel                 human table
 *   npm run bench:wheel -- --json       ...and one JSON object as the last line
 *   --timers N (default 1,000,000)  --lateness-timers N (100,000)  --spread-ms N (2,000)  --repeat N (3)
 *
 * Rates are medians of --repeat runs. "expire" is the time to hand out N timers
 * that are all already due (the event loop is held busy past their due times
 * first), so it measures the timer structure, not the waiting. Bytes per timer:
 * Wasm linear-memory growth for the wheel, V8 heap growth (after gc) for the others.
 * Lateness: fire instant minus due instant, for timers due at random over the
 * spread, starting LEAD_MS after scheduling begins, so that the scheduling loop
 * itself (which blocks the thread) makes nothing late.
 */
import { performance } from "node:perf_hooks";
import { loopTimerDriver, mainThreadDriver } from "../node/src/timing/main-thread-driver.js";
import type { TimerWheel } from "../node/src/timing/timer-wheel.js";
import { Timers } from "../node/src/timing/timers.js";
import type { WakeDriverFactory } from "../node/src/timing/wake-driver.js";
import { preciseNowMs } from "../node/src/timing/wake-driver.js";
import { TimingWheel } from "../node/src/timing/wasm-wheel.js";
import { workerThreadDriver } from "../node/src/timing/worker-thread-driver.js";
import { benchArgs } from "./args.js";
import { median, percentile } from "./stats.js";
import { TsTimingWheel } from "./ts-wheel.js";

interface Figures {
  schedule_per_s?: number;
  cancel_per_s?: number;
  expire_per_s?: number;
  bytes_per_timer?: number;
  lateness_p50_ms?: number;
  lateness_p99_ms?: number;
  lateness_max_ms?: number;
  early?: number;
}

const { values: args } = benchArgs({
  options: {
    json: { type: "boolean", default: false },
    timers: { type: "string", default: "1000000" },
    "lateness-timers": { type: "string", default: "100000" },
    "spread-ms": { type: "string", default: "2000" },
    repeat: { type: "string", default: "3" },
  },
});
const N = Number(args.timers);
const LATENESS_N = Number(args["lateness-timers"]);
const SPREAD_MS = Number(args["spread-ms"]);
const REPEAT = Number(args.repeat);
const LEAD_MS = 500;

const gc = (globalThis as { gc?: () => void }).gc ?? (() => {});
const nowMs = preciseNowMs;
const busyWaitUntil = (ms: number) => {
  while (nowMs() < ms);
};
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function randomDelays(count: number, spreadMs: number, integer: boolean): Float64Array {
  const delays = new Float64Array(count);
  for (let i = 0; i < count; i++)
    delays[i] = integer ? 1 + Math.floor(Math.random() * spreadMs) : Math.random() * spreadMs;
  return delays;
}

function rate(count: number, elapsedMs: number): number {
  return Math.round((count / elapsedMs) * 1000);
}

// ---- wheels (Wasm and TypeScript) -------------------------------------------------------

function measureWheel(
  make: (startMs: number) => TimerWheel,
  memoryOf: (w: TimerWheel) => number,
): Figures {
  const schedule: number[] = [];
  const cancel: number[] = [];
  const expire: number[] = [];
  let bytes = 0;
  for (let run = 0; run < REPEAT; run++) {
    const startMs = Date.now();
    const dues = randomDelays(N, 60_000, false).map((d) => startMs + d);
    gc();
    const baseBytes = memoryOf(make(startMs));
    gc();
    const wheel = make(startMs);
    let t0 = performance.now();
    const handles = new Float64Array(N);
    for (let i = 0; i < N; i++) handles[i] = wheel.schedule(dues[i]!);
    schedule.push(rate(N, performance.now() - t0));
    gc();
    bytes = (memoryOf(wheel) - baseBytes) / N;
    t0 = performance.now();
    for (let i = 0; i < N; i++) wheel.cancel(handles[i]!);
    cancel.push(rate(N, performance.now() - t0));

    // Expire timers spread like setTimeout's below (1 s), all already due.
    const expiring = randomDelays(N, 1_000, true);
    for (let i = 0; i < N; i++) wheel.schedule(startMs + expiring[i]!);
    t0 = performance.now();
    const fired = expireAll(wheel, startMs + 1_100);
    expire.push(rate(fired, performance.now() - t0));
    if (fired !== N) throw new Error(`wheel fired ${fired} of ${N}`);
  }
  return {
    schedule_per_s: median(schedule),
    cancel_per_s: median(cancel),
    expire_per_s: median(expire),
    bytes_per_timer: Math.round(bytes * 10) / 10,
  };
}

/** Hands out every due timer through a callback per timer, as setTimeout's expiry is measured (the Wasm wheel's hot path). */
function expireAll(wheel: TimerWheel, nowMs: number): number {
  if (!(wheel instanceof TimingWheel)) return wheel.advance(nowMs).length;
  let fired = 0;
  wheel.forEachExpired(nowMs, () => fired++);
  return fired;
}

function measureWasmBatch(): number {
  const runs: number[] = [];
  for (let run = 0; run < REPEAT; run++) {
    const startMs = Date.now();
    const dues = randomDelays(N, 60_000, false).map((d) => startMs + d);
    const wheel = new TimingWheel({ nowMs: startMs });
    const t0 = performance.now();
    wheel.scheduleMany(dues);
    runs.push(rate(N, performance.now() - t0));
  }
  return median(runs);
}

// ---- Node's setTimeout ------------------------------------------------------------------------

async function measureSetTimeout(): Promise<Figures> {
  const schedule: number[] = [];
  const cancel: number[] = [];
  const expire: number[] = [];
  let bytes = 0;
  const noop = () => {};
  for (let run = 0; run < REPEAT; run++) {
    const delays = randomDelays(N, 60_000, true);
    gc();
    const baseHeap = process.memoryUsage().heapUsed;
    const handles: NodeJS.Timeout[] = new Array(N);
    let t0 = performance.now();
    for (let i = 0; i < N; i++) handles[i] = setTimeout(noop, delays[i]);
    schedule.push(rate(N, performance.now() - t0));
    gc();
    bytes = (process.memoryUsage().heapUsed - baseHeap) / N;
    t0 = performance.now();
    for (let i = 0; i < N; i++) clearTimeout(handles[i]);
    cancel.push(rate(N, performance.now() - t0));
    handles.length = 0;
    gc();

    expire.push(await setTimeoutExpireRate(randomDelays(N, 1_000, true)));
  }
  return {
    schedule_per_s: median(schedule),
    cancel_per_s: median(cancel),
    expire_per_s: median(expire),
    bytes_per_timer: Math.round(bytes * 10) / 10,
  };
}

/** Schedules all, holds the loop busy until every one is due, then times how fast they are handed out. */
function setTimeoutExpireRate(delays: Float64Array): Promise<number> {
  return new Promise((resolve) => {
    let remaining = delays.length;
    let t0 = 0;
    const onFire = () => {
      if (--remaining === 0) resolve(rate(delays.length, performance.now() - t0));
    };
    for (let i = 0; i < delays.length; i++) setTimeout(onFire, delays[i]);
    busyWaitUntil(nowMs() + 1_100);
    t0 = performance.now();
  });
}

// ---- lateness ---------------------------------------------------------------------------------

function summarize(lateness: Float64Array): Figures {
  lateness.sort();
  const round = (x: number) => Math.round(x * 1000) / 1000;
  return {
    lateness_p50_ms: round(percentile(lateness, 50)),
    lateness_p99_ms: round(percentile(lateness, 99)),
    lateness_max_ms: round(lateness[lateness.length - 1]!),
    early: lateness.filter((x) => x < 0).length,
  };
}

/** Medians over --repeat runs of each lateness figure. */
async function repeatLateness(measure: () => Promise<Figures>): Promise<Figures> {
  const runs: Figures[] = [];
  for (let run = 0; run < REPEAT; run++) {
    gc();
    await sleep(200);
    runs.push(await measure());
  }
  const pick = (key: keyof Figures) => median(runs.map((r) => r[key]!));
  return {
    lateness_p50_ms: pick("lateness_p50_ms"),
    lateness_p99_ms: pick("lateness_p99_ms"),
    lateness_max_ms: pick("lateness_max_ms"),
    early: pick("early"),
  };
}

type ScheduleFn = (callback: () => void, delayMs: number) => void;

/** Lateness of LATENESS_N timers, due at random over the spread after the lead, through `schedule`. */
async function measureLateness(schedule: ScheduleFn): Promise<Figures> {
  const delays = randomDelays(LATENESS_N, SPREAD_MS, true).map((d) => LEAD_MS + d);
  const lateness = new Float64Array(LATENESS_N);
  await new Promise<void>((resolve) => {
    let remaining = LATENESS_N;
    for (let i = 0; i < LATENESS_N; i++) {
      const dueMs = nowMs() + delays[i]!;
      schedule(() => {
        lateness[i] = nowMs() - dueMs;
        if (--remaining === 0) resolve();
      }, delays[i]!);
    }
  });
  return summarize(lateness);
}

async function latenessOfTimers(driver: WakeDriverFactory): Promise<Figures> {
  const timers = new Timers({ driver });
  try {
    return await measureLateness((callback, delayMs) => timers.setTimeout(callback, delayMs));
  } finally {
    timers.close();
  }
}

const latenessOfSetTimeout = () =>
  measureLateness((callback, delayMs) => setTimeout(callback, delayMs));

// ---- report -------------------------------------------------------------------------------------

function table(rows: [string, Figures][]): string {
  const columns: (keyof Figures)[] = [
    "schedule_per_s",
    "cancel_per_s",
    "expire_per_s",
    "bytes_per_timer",
    "lateness_p50_ms",
    "lateness_p99_ms",
    "lateness_max_ms",
    "early",
  ];
  const cell = (v: number | undefined) => (v === undefined ? "-" : v.toLocaleString("en-US"));
  const lines = [
    ["", ...columns],
    ...rows.map(([name, f]) => [name, ...columns.map((c) => cell(f[c]))]),
  ];
  const widths = lines[0]!.map((_, i) => Math.max(...lines.map((l) => l[i]!.length)));
  return lines
    .map((l) =>
      l.map((v, i) => (i === 0 ? v.padEnd(widths[i]!) : v.padStart(widths[i]!))).join("  "),
    )
    .join("\n");
}

async function main(): Promise<void> {
  if (!(globalThis as { gc?: unknown }).gc)
    console.error("note: run with --expose-gc for heap figures (npm run bench:wheel does)");
  console.log(
    `bench:wheel  node ${process.version}  timers=${N.toLocaleString()}  lateness timers=${LATENESS_N.toLocaleString()} over ${SPREAD_MS} ms (after a ${LEAD_MS} ms lead)  repeat=${REPEAT} (medians)\n`,
  );

  const wasmMemory = (w: TimerWheel) => (w as TimingWheel).memoryBytes;
  const heap = () => process.memoryUsage().heapUsed;
  const wheel: Figures = measureWheel((startMs) => new TimingWheel({ nowMs: startMs }), wasmMemory);
  const wheelBatchSchedule = measureWasmBatch();
  const tsWheel: Figures = measureWheel((startMs) => new TsTimingWheel({ nowMs: startMs }), heap);
  const setTimeoutFigures = await measureSetTimeout();

  const workerLateness = await repeatLateness(() => latenessOfTimers(workerThreadDriver));
  const mainLateness = await repeatLateness(() => latenessOfTimers(mainThreadDriver));
  const loopLateness = await repeatLateness(() => latenessOfTimers(loopTimerDriver));
  const setTimeoutLateness = await repeatLateness(latenessOfSetTimeout);

  Object.assign(wheel, mainLateness); // the default driver
  Object.assign(setTimeoutFigures, setTimeoutLateness);
  const ratios = {
    schedule: round2(wheel.schedule_per_s! / setTimeoutFigures.schedule_per_s!),
    cancel: round2(wheel.cancel_per_s! / setTimeoutFigures.cancel_per_s!),
    expire: round2(wheel.expire_per_s! / setTimeoutFigures.expire_per_s!),
    bytes_per_timer: round2(wheel.bytes_per_timer! / setTimeoutFigures.bytes_per_timer!),
    lateness_p99: round2(wheel.lateness_p99_ms! / setTimeoutFigures.lateness_p99_ms!),
  };

  console.log(
    table([
      ["wheel (Wasm; Timers on the default main-thread driver)", wheel],
      ["  Timers on the worker-thread driver", workerLateness],
      ["  Timers on the loop-timer driver (the dispatcher's)", loopLateness],
      ["setTimeout", setTimeoutFigures],
      ["tsWheel (plain TypeScript)", tsWheel],
    ]),
  );
  console.log(
    `\nWasm scheduleMany (batched through the input buffer): ${wheelBatchSchedule.toLocaleString("en-US")} /s`,
  );
  console.log(`ratios wheel / setTimeout: ${JSON.stringify(ratios)}`);
  console.log("targets: schedule and expire >= 10x, bytes <= 1/8 (0.125), lateness p99 <= 1 ms");
  if (args.json) {
    console.log(
      JSON.stringify({
        timers: N,
        lateness_timers: LATENESS_N,
        spread_ms: SPREAD_MS,
        wheel: { ...wheel, schedule_batch_per_s: wheelBatchSchedule },
        wheel_worker_thread_driver: workerLateness,
        wheel_loop_timer_driver: loopLateness,
        setTimeout: setTimeoutFigures,
        tsWheel,
        ratios,
      }),
    );
  }
}

function round2(x: number): number {
  return Math.round(x * 100) / 100;
}

await main();
