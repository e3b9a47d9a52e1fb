/**
 * Loads the Lua scripts of scripts/<name>-<numKeys>.lua (each with its
 * contract header). tsc does not copy them to dist/, so from dist the search
 * walks up to the repository's node/src/adapters/redis/scripts.
 */
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const SOURCE_DIR = join("node", "src", "adapters", "redis", "scripts");

function locate(file: string): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  const beside = join(dir, "scripts", file);
  if (existsSync(beside)) return beside;
  for (;;) {
    const candidate = join(dir, SOURCE_DIR, file);
    if (existsSync(candidate)) return candidate;
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`Lua script ${file} not found`);
    dir = parent;
  }
}

export interface LuaScript {
  name: string;
  numberOfKeys: number;
  lua: string;
}

export function loadScript(name: string, numberOfKeys: number): LuaScript {
  return { name, numberOfKeys, lua: readFileSync(locate(`${name}-${numberOfKeys}.lua`), "utf8") };
}
