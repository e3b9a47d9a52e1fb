/**
 * Loads user handlers from a module named by --handlers or CF_WORKER_HANDLERS.
 * The module (ESM, or CommonJS through Node's interop) exports:
 *
 *   export const handlers = {
 *     "email.send": async (payload, ctx) => { ...; return { id } },
 *   };
 *   // optional: CPU-bound handlers, run in the piscina pool; each names an
 *   // export of this same module, called with { payload, ctx }
 *   export const cpuHandlers = { "image.resize": "resizeImage" };
 *   export function resizeImage({ payload, ctx }) { ... }
 *
 * Anything else is refused at start with a message naming the problem: a
 * worker must not start half-configured.
 */
import path from "node:path";
import { pathToFileURL } from "node:url";
import type { Handler, HandlerRegistry } from "../../ports/handler.js";
import type { CpuPool } from "./cpu-pool.js";

export async function registerUserModule(
  modulePath: string,
  registry: HandlerRegistry,
  cpuPool: CpuPool,
): Promise<string[]> {
  const file = path.resolve(modulePath);
  let loaded: Record<string, unknown>;
  try {
    loaded = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
  } catch (error) {
    throw new Error(`cannot load handler module ${file}: ${(error as Error).message}`);
  }
  const handlers = loaded.handlers ?? {};
  const cpuHandlers = loaded.cpuHandlers ?? {};
  if (!isRecord(handlers) || !isRecord(cpuHandlers)) {
    throw new Error(`handler module ${file}: "handlers" and "cpuHandlers" must be plain objects`);
  }
  const registered: string[] = [];
  for (const [type, handler] of Object.entries(handlers)) {
    if (typeof handler !== "function") {
      throw new Error(
        `handler module ${file}: handlers[${JSON.stringify(type)}] is not a function`,
      );
    }
    registry.register(type, handler as Handler);
    registered.push(type);
  }
  for (const [type, exportName] of Object.entries(cpuHandlers)) {
    if (typeof exportName !== "string" || typeof loaded[exportName] !== "function") {
      throw new Error(
        `handler module ${file}: cpuHandlers[${JSON.stringify(type)}] must name an exported function`,
      );
    }
    registry.register(type, cpuPool.handler(file, exportName));
    registered.push(type);
  }
  return registered;
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);
