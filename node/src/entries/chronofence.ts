/** Package entry `chronofence`: the in-process timer API, the timing wheel, and what a handler module needs. */

export { PermanentError } from "../domain/execution-error.js";
export type { Handler, HandlerContext } from "../ports/handler.js";
export { loopTimerDriver, mainThreadDriver } from "../timing/main-thread-driver.js";
export { Timer, Timers, type TimersOptions } from "../timing/timers.js";
export type { WakeDriver, WakeDriverFactory } from "../timing/wake-driver.js";
export { TimingWheel } from "../timing/wasm-wheel.js";
export { workerThreadDriver } from "../timing/worker-thread-driver.js";
