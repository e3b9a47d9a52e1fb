/** Package entry `chronofence`: the in-process timer API, the timing wheel, and what a handler module needs. */

export { TimingWheel } from "./adapters/wasm/wasm-wheel.js";
export type { Handler, HandlerContext } from "./app/worker/handler.js";
export { PermanentError } from "./domain/execution-error.js";
export { mainThreadDriver } from "./timers/main-thread-driver.js";
export { Timer, Timers, type TimersOptions } from "./timers/timers.js";
export type { WakeDriver, WakeDriverFactory } from "./timers/wake-driver.js";
export { workerThreadDriver } from "./timers/worker-thread-driver.js";
