/**
 * Where a request's body ends must be beyond doubt, or a proxy in front of
 * us and we could read the same bytes as different requests (request
 * smuggling). uWebSockets.js refuses Content-Length together with
 * Transfer-Encoding, a malformed Content-Length and a bad chunk size itself
 * (400 and close), but it frames by the first of two Content-Lengths and
 * takes any Transfer-Encoding that mentions "chunked" ("xchunked",
 * "gzip, chunked", chunked twice) as chunked. This refuses those: one
 * Content-Length at most, and a Transfer-Encoding only as the single value
 * `chunked`, the only coding we decode.
 */

export type FramingProblem =
  | "duplicate_content_length"
  | "duplicate_transfer_encoding"
  | "unsupported_transfer_encoding"
  | "content_length_with_transfer_encoding";

/** `forEachHeader` visits every header line (lower-case name), repeats included. */
export function framingProblemOf(
  forEachHeader: (visit: (name: string, value: string) => void) => void,
): FramingProblem | null {
  let lengths = 0;
  const codings: string[] = [];
  forEachHeader((name, value) => {
    if (name === "content-length") lengths++;
    else if (name === "transfer-encoding") codings.push(value);
  });
  if (lengths > 1) return "duplicate_content_length";
  if (codings.length === 0) return null;
  if (codings.length > 1) return "duplicate_transfer_encoding";
  if (codings[0]!.trim().toLowerCase() !== "chunked") return "unsupported_transfer_encoding";
  return lengths > 0 ? "content_length_with_transfer_encoding" : null;
}
