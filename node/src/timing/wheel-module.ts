import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** The raw exports of wheel/assembly/index.ts. */
export interface WheelExports {
  memory: WebAssembly.Memory;
  init(nowTick: number): number;
  schedule(dueTick: number): number;
  scheduleBatch(count: number): number;
  cancel(handle: number): number;
  cancelBatch(count: number): number;
  advance(nowTick: number): number;
  nextExpiry(): number;
  size(): number;
  position(): number;
  inputBuffer(): number;
  outputBuffer(): number;
  ioCapacity(): number;
}

const WASM_PATH = join("wheel", "build", "wheel.wasm");
let compiled: WebAssembly.Module | undefined;

/** Finds wheel/build/wheel.wasm above this file, whether it runs from node/src or dist/node/src. */
function locateWasm(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = join(dir, WASM_PATH);
    if (existsSync(candidate)) return candidate;
    const parent = dirname(dir);
    if (parent === dir)
      throw new Error(`${WASM_PATH} not found: run \`npm run build:wheel\` first`);
    dir = parent;
  }
}

/** A fresh instance (own linear memory) of the compiled wheel; the module is compiled once per thread. */
export function instantiateWheel(): WheelExports {
  compiled ??= new WebAssembly.Module(readFileSync(locateWasm()));
  return new WebAssembly.Instance(compiled, {}).exports as unknown as WheelExports;
}
