import { ChronofenceError, ErrorCode } from "../../domain/errors.js";

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** Strict UTF-8, then JSON; either failing is a 400. */
export function parseJson(body: Buffer): unknown {
  if (body.length === 0) {
    throw new ChronofenceError(ErrorCode.InvalidJson, "a JSON body is required");
  }
  let text: string;
  try {
    text = utf8.decode(body);
  } catch {
    throw new ChronofenceError(ErrorCode.InvalidJson, "body is not valid UTF-8");
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new ChronofenceError(ErrorCode.InvalidJson, "body is not valid JSON", {
      details: { reason: (error as Error).message.slice(0, 200) },
    });
  }
}
