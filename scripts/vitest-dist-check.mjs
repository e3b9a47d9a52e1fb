// Vitest globalSetup: refuses to run the suite on a stale build. Tests import
// node/src directly, but the child-process tests run the built CLI
// (bin/chronofence.js → dist/) and every wheel test loads
// wheel/build/wheel.wasm, so without a build they would test old code and
// pass or fail for the wrong reason. `npm test` builds first (pretest);
// `npx vitest run <file>` does not, and this check says so.
//
// Fresh means: every node/src/**/*.ts has its dist/node/src/**/*.js, written
// no earlier than the source was last changed, and wheel/build/wheel.wasm is
// no older than any file of wheel/assembly/.
//
// vitest.config.ts:  test: { globalSetup: ["scripts/vitest-dist-check.mjs", ...] }
import { readdirSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

function* filesUnder(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) yield* filesUnder(file);
    else yield file;
  }
}

const mtimeMs = (file) => {
  try {
    return statSync(file).mtimeMs;
  } catch {
    return null; // missing
  }
};

/** Every reason the build is stale, as `source (why)`; empty when fresh. */
export function staleOutputs() {
  const stale = [];
  for (const source of filesUnder(path.join(root, "node", "src"))) {
    if (!source.endsWith(".ts") || source.endsWith(".d.ts")) continue;
    const relative = path.relative(root, source);
    const output = path.join(root, "dist", relative.replace(/\.ts$/, ".js"));
    const built = mtimeMs(output);
    if (built === null) stale.push(`${relative} (no ${path.relative(root, output)})`);
    else if (built < mtimeMs(source)) stale.push(`${relative} (changed after it was built)`);
  }
  const wasm = mtimeMs(path.join(root, "wheel", "build", "wheel.wasm"));
  for (const source of filesUnder(path.join(root, "wheel", "assembly"))) {
    const relative = path.relative(root, source);
    if (wasm === null) stale.push(`${relative} (no wheel/build/wheel.wasm)`);
    else if (wasm < mtimeMs(source)) stale.push(`${relative} (changed after wheel.wasm was built)`);
  }
  return stale;
}

export default function setup() {
  const stale = staleOutputs();
  if (stale.length === 0) return;
  const shown = stale.slice(0, 5).join("\n  ");
  const more = stale.length > 5 ? `\n  … and ${stale.length - 5} more` : "";
  throw new Error(
    `the build is older than the sources; run \`npm run build\` (npm test does it first):\n  ${shown}${more}`,
  );
}
