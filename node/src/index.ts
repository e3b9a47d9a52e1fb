/** Package entry `chronofence`: the in-process timer API and the timing wheel. */

export { TimingWheel } from "./adapters/wasm/wasm-wheel.js";
export { mainThreadDriver } from "./timers/main-thread-driver.js";
export { Timer, Timers, type TimersOptions } from "./timers/timers.js";
export type { WakeDriver, WakeDriverFactory } from "./timers/wake-driver.js";
export { workerThreadDriver } from "./timers/worker-thread-driver.js";
