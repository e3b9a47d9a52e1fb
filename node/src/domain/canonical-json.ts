/**
 * Canonical JSON text: object keys sorted by UTF-16 code units at every level
 * (the order of RFC 8785), no whitespace, numbers and strings as
 * JSON.stringify writes them (which is what RFC 8785 prescribes too).
 * `undefined` members are left out, as JSON.stringify does. Two values that
 * differ only in key order give the same text.
 *
 * Recursive: call it on documents whose depth is already bounded
 * (findJsonProblem).
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
  if (Array.isArray(value)) {
    return `[${value.map((item) => (item === undefined ? "null" : canonicalJson(item))).join(",")}]`;
  }
  const record = value as Record<string, unknown>;
  const members: string[] = [];
  for (const key of Object.keys(record).sort()) {
    const child = record[key];
    if (child !== undefined) members.push(`${JSON.stringify(key)}:${canonicalJson(child)}`);
  }
  return `{${members.join(",")}}`;
}
