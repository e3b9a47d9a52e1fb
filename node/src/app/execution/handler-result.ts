/**
 * What a handler returned, as the JSON stored for its task: refused when it is
 * not JSON or is larger than the worker's limit on stored results,
 * as a permanent failure of the attempt (retrying would return the same).
 */
import { PermanentError } from "../../domain/execution-error.js";
import { storedJsonBytes } from "../../domain/json-limits.js";

export function resultJsonOf(result: unknown, maxResultBytes: number): string {
  let json: string | undefined;
  try {
    json = JSON.stringify(result === undefined ? null : result);
  } catch (error) {
    throw new PermanentError("the handler's result is not JSON", {
      cause: error,
      code: "result_not_json",
    });
  }
  if (json === undefined) return "null"; // a function or symbol: no result
  if (storedJsonBytes(json) > maxResultBytes) {
    throw new PermanentError(`the handler's result is larger than ${maxResultBytes} bytes`, {
      code: "result_too_large",
    });
  }
  return json;
}
