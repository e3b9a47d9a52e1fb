/** Package entry `chronofence/wheel`: the WebAssembly timing wheel. */

export type { TimerWheel } from "../timing/timer-wheel.js";
export { TimingWheel } from "../timing/wasm-wheel.js";
