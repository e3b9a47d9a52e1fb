/**
 * Guards for client JSON before it is re-serialised or sent to Postgres:
 * nesting depth (deep documents overflow recursive serialisers and Postgres'
 * parser stack) and non-finite numbers (`1e400` parses to Infinity, which
 * JSON.stringify would silently turn into null).
 */
export interface JsonProblem {
  rule: "max_depth" | "non_finite_number";
  path: string;
}

/** Iterative, so a hostile document cannot overflow the stack of the checker itself. */
export function findJsonProblem(value: unknown, maxDepth: number): JsonProblem | null {
  const stack: Array<{ node: unknown; depth: number; path: string }> = [
    { node: value, depth: 0, path: "$" },
  ];
  while (stack.length > 0) {
    const { node, depth, path } = stack.pop()!;
    if (typeof node === "number" && !Number.isFinite(node))
      return { rule: "non_finite_number", path };
    if (node === null || typeof node !== "object") continue;
    if (depth >= maxDepth) return { rule: "max_depth", path };
    if (Array.isArray(node)) {
      for (let i = 0; i < node.length; i++)
        stack.push({ node: node[i], depth: depth + 1, path: `${path}[${i}]` });
    } else {
      for (const [key, child] of Object.entries(node)) {
        stack.push({ node: child, depth: depth + 1, path: `${path}.${key}` });
      }
    }
  }
  return null;
}

/** UTF-8 byte length of a string without allocating a buffer. */
export function utf8ByteLength(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit < 0x80) bytes += 1;
    else if (unit < 0x800) bytes += 2;
    else if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length) {
      bytes += 4; // a surrogate pair is one 4-byte code point
      i++;
    } else bytes += 3;
  }
  return bytes;
}
