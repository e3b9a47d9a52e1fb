/**
 * A small HTTP client of Chronofence's own API, for processes that should
 * see what a user sees (the CLI's schedule commands, the watchdog). Errors
 * come back as ChronofenceErrors carrying the server's code and message.
 */
import { ChronofenceError, ErrorCode } from "../../domain/errors.js";

export interface ApiClientOptions {
  baseUrl: string;
  apiKey: string;
  timeoutMs: number;
}

export class ApiClient {
  constructor(private readonly options: ApiClientOptions) {}

  // biome-ignore lint/suspicious/noExplicitAny: JSON from the API; callers read documented fields
  async request(method: string, path: string, body?: unknown): Promise<any> {
    const headers: Record<string, string> = { authorization: `Bearer ${this.options.apiKey}` };
    if (body !== undefined) headers["content-type"] = "application/json";
    let response: Response;
    try {
      response = await fetch(new URL(path, this.options.baseUrl), {
        method,
        headers,
        ...(body !== undefined && { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(this.options.timeoutMs),
      });
    } catch (error) {
      throw new ChronofenceError(
        ErrorCode.Unavailable,
        `API unreachable at ${this.options.baseUrl}: ${(error as Error).message}`,
        { cause: error },
      );
    }
    const text = await response.text();
    let parsed: unknown = null;
    try {
      parsed = text === "" ? null : JSON.parse(text);
    } catch {
      parsed = text;
    }
    if (response.ok) return parsed;
    const error = (parsed as { error?: { code?: string; message?: string; details?: unknown } })
      ?.error;
    const code = Object.values(ErrorCode).includes(error?.code as ErrorCode)
      ? (error!.code as ErrorCode)
      : ErrorCode.Internal;
    throw new ChronofenceError(code, `${response.status} ${error?.message ?? text.slice(0, 200)}`, {
      details: { status: response.status, ...(error?.details as Record<string, unknown>) },
    });
  }
}
