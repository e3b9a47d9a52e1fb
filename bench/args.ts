/**
 * A bench's command line: node:util parseArgs, except that a flag it does
 * not know, or a flag without its value, is answered with the flags it
 * takes (exit 2) instead of a stack trace, and `--help` lists them (exit 0).
 * Its own module, free of the services' clients, so that bench:wheel's
 * memory figures do not carry them.
 */
import { type ParseArgsConfig, parseArgs } from "node:util";

export function benchArgs<T extends ParseArgsConfig>(config: T): ReturnType<typeof parseArgs<T>> {
  if (process.argv.slice(2).includes("--help")) {
    console.log(flagsOf(config));
    process.exit(0);
  }
  try {
    return parseArgs(config);
  } catch (error) {
    console.error(
      `${error instanceof Error ? error.message : String(error)}\n\n${flagsOf(config)}`,
    );
    process.exit(2);
  }
}

function flagsOf(config: ParseArgsConfig): string {
  const flags = Object.entries(config.options ?? {}).map(([name, option]) => {
    const value = option.type === "string" ? " <value>" : "";
    const fallback = option.default === undefined ? "" : ` (default ${String(option.default)})`;
    return `  --${name}${value}${fallback}`;
  });
  return ["flags:", ...flags, "  --help"].join("\n");
}
