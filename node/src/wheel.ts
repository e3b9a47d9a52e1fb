/** Package entry `chronofence/wheel`: the WebAssembly timing wheel. */
export { TimingWheel } from "./adapters/wasm/wasm-wheel.js";
export type { TimerWheel } from "./ports/timer-wheel.js";
