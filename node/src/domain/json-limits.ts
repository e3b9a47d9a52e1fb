/**
 * Guards for client JSON before it is re-serialised or sent to Postgres
 * (and the size it will have there: storedJsonBytes):
 * nesting depth (deep documents overflow recursive serialisers and Postgres'
 * parser stack), non-finite numbers (`1e400` parses to Infinity, which
 * JSON.stringify would silently turn into null), and strings — values or
 * object keys — that Postgres' jsonb refuses: U+0000 (22P05) and lone UTF-16
 * surrogates such as `"\ud800"` (22P02). Refused there, one such row would fail
 * a whole group commit; refused here, it is a 422 for its own request.
 */
export interface JsonProblem {
  rule: "max_depth" | "non_finite_number" | "unsupported_unicode";
  path: string;
}

/** A high surrogate not followed by a low one, or a low one not preceded by a high one. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** True when jsonb can store the string: no U+0000 and no lone surrogate. */
export const isStorableText = (text: string): boolean =>
  !text.includes("\u0000") && !LONE_SURROGATE.test(text);

interface Frame {
  node: unknown;
  depth: number;
  parent: Frame | null;
  /** The key or index under the parent; paths are built only when a problem is found. */
  step: string | number | null;
}

/** Iterative, so a hostile document cannot overflow the stack of the checker itself. */
export function findJsonProblem(value: unknown, maxDepth: number): JsonProblem | null {
  const stack: Frame[] = [{ node: value, depth: 0, parent: null, step: null }];
  while (stack.length > 0) {
    const frame = stack.pop()!;
    const { node, depth } = frame;
    if (typeof node === "number" && !Number.isFinite(node))
      return { rule: "non_finite_number", path: pathOf(frame) };
    if (typeof node === "string" && !isStorableText(node))
      return { rule: "unsupported_unicode", path: pathOf(frame) };
    if (node === null || typeof node !== "object") continue;
    if (depth >= maxDepth) return { rule: "max_depth", path: pathOf(frame) };
    if (Array.isArray(node)) {
      for (let i = 0; i < node.length; i++)
        stack.push({ node: node[i], depth: depth + 1, parent: frame, step: i });
    } else {
      for (const [key, child] of Object.entries(node)) {
        if (!isStorableText(key)) {
          const at: Frame = { node: key, depth: depth + 1, parent: frame, step: key };
          return { rule: "unsupported_unicode", path: pathOf(at) };
        }
        stack.push({ node: child, depth: depth + 1, parent: frame, step: key });
      }
    }
  }
  return null;
}

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/** `$.a[3]["odd key"]`; odd keys JSON-escaped (a NUL shows as `\u0000`). */
function pathOf(frame: Frame): string {
  const steps: string[] = [];
  for (let f: Frame | null = frame; f !== null && f.step !== null; f = f.parent) {
    const step = f.step;
    if (typeof step === "number") steps.push(`[${step}]`);
    else steps.push(IDENTIFIER.test(step) ? `.${step}` : `[${JSON.stringify(step)}]`);
  }
  return `$${steps.reverse().join("")}`;
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

/**
 * The UTF-8 bytes of `json` (JSON.stringify's text) once Postgres stores it
 * as jsonb and prints it back (`payload::text`, what an envelope carries):
 * jsonb writes a space after every `,` and `:`, and a number in full, without
 * an exponent — `5e-324` becomes 326 characters, so 64 KiB of them come back
 * as about 3 MB. Limits on what is stored and sent must measure this, not the
 * text a client sent. Strings print as JSON.stringify writes them; keys were
 * already deduplicated by JSON.parse, as jsonb would (last one wins).
 * An integration test compares it with Postgres' octet_length(jsonb::text).
 */
export function storedJsonBytes(json: string): number {
  let bytes = utf8ByteLength(json);
  for (let i = 0; i < json.length; i++) {
    const c = json.charCodeAt(i);
    if (c === QUOTE) {
      for (i++; i < json.length && json.charCodeAt(i) !== QUOTE; i++) {
        if (json.charCodeAt(i) === BACKSLASH) i++;
      }
    } else if (c === COMMA || c === COLON) {
      bytes++;
    } else if (c === MINUS || (c >= DIGIT_0 && c <= DIGIT_9)) {
      let end = i + 1;
      while (end < json.length && isNumberChar(json.charCodeAt(end))) end++;
      const token = json.slice(i, end);
      if (token.includes("e")) bytes += expandedLength(token) - token.length;
      i = end - 1;
    }
  }
  return bytes;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const MINUS = 0x2d;
const DIGIT_0 = 0x30;
const DIGIT_9 = 0x39;

const isNumberChar = (c: number): boolean =>
  (c >= DIGIT_0 && c <= DIGIT_9) || c === 0x2e || c === 0x65 || c === 0x2b || c === MINUS;

/** The length of `-1.25e+30` written out as Postgres' numeric prints it (`-1250…0`, `0.000…5`). */
function expandedLength(token: string): number {
  const sign = token.startsWith("-") ? 1 : 0;
  const [mantissa = "", exponent = "0"] = token.slice(sign).split("e");
  const [whole = "", fraction = ""] = mantissa.split(".");
  const digits = whole.length + fraction.length;
  const point = whole.length + Number(exponent); // where the decimal point falls among the digits
  if (point >= digits) return sign + point; // an integer: trailing zeros
  if (point <= 0) return sign + 2 + -point + digits; // 0.000ddd
  return sign + digits + 1;
}
