/**
 * The built-in handlers, for tests, demos and the simplest real use:
 *  - noop:  does nothing, returns null.
 *  - echo:  returns its payload: the task's result is what it was given
 *           (the quick start's task type).
 *  - chronofence.canary: the watchdog's canary task, a noop: its completion
 *           is the proof that submission, dispatch and workers work.
 *  - sleep: {"ms": n} waits n ms (honouring the timeout), returns {"slept_ms": n}.
 *  - fail:  {"message"?, "code"?, "retryable"? = true, "fail_attempts"?} throws
 *           while ctx.attempt ≤ fail_attempts (always, if absent); after that
 *           succeeds with {"attempt": n}. Drives retries and dead letters in tests.
 *  - http:  {"url", "body"?, "headers"?} POSTs body (JSON; the whole payload
 *           if no body is given) with Idempotency-Key (the task's key, else its
 *           id: stable across attempts), X-Chronofence-Fencing-Token,
 *           X-Chronofence-Task-Id and X-Chronofence-Attempt headers, aborted
 *           at the task's timeout. 2xx = success ({status, body}, the first
 *           64 KiB of the answer); 408, 429, 5xx and network errors are
 *           retryable; other statuses are not, a 3xx included (redirects are
 *           not followed). Only to addresses the egress policy permits
 *           (safe-fetch.ts, egress-policy.ts: no loopback, link-local,
 *           private or metadata address unless CF_HTTP_HANDLER_ALLOW says so).
 */

import { PermanentError } from "../../domain/execution-error.js";
import type { Handler, HandlerRegistry } from "../../ports/handler.js";
import { EgressPolicy } from "./egress-policy.js";
import { EgressRefusedError, type Resolver, safeFetch } from "./safe-fetch.js";

/** The most of an answer the http handler reads (and so stores as its result). */
export const MAX_RESPONSE_BYTES = 64 * 1024;

export interface BuiltinOptions {
  /** Where the http handler may connect (default: public addresses only). */
  egress?: EgressPolicy;
  /** DNS for the http handler (tests). */
  resolve?: Resolver;
}

export function registerBuiltins(
  registry: HandlerRegistry,
  options: BuiltinOptions = {},
): HandlerRegistry {
  return registry
    .register("noop", noop)
    .register("echo", echo)
    .register("chronofence.canary", noop)
    .register("sleep", sleepHandler)
    .register("fail", failHandler)
    .register("http", httpHandler(options.egress ?? new EgressPolicy(), options.resolve));
}

const noop: Handler = async () => null;

const echo: Handler = async (payload) => payload;

const sleepHandler: Handler = async (payload, ctx) => {
  const ms = numberField(payload, "ms");
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    ctx.signal.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        reject(ctx.signal.reason);
      },
      { once: true },
    );
  });
  return { slept_ms: ms };
};

const failHandler: Handler = async (payload, ctx) => {
  const p = (isObject(payload) ? payload : {}) as Record<string, unknown>;
  const failAttempts = typeof p.fail_attempts === "number" ? p.fail_attempts : Infinity;
  if (ctx.attempt > failAttempts) return { attempt: ctx.attempt };
  const message =
    typeof p.message === "string" ? p.message : `fail handler, attempt ${ctx.attempt}`;
  const code = typeof p.code === "string" ? p.code : undefined;
  if (p.retryable === false) throw new PermanentError(message, code === undefined ? {} : { code });
  throw Object.assign(new Error(message), code === undefined ? {} : { code });
};

const httpHandler =
  (policy: EgressPolicy, resolve: Resolver | undefined): Handler =>
  async (payload, ctx) => {
    if (!isObject(payload) || typeof payload.url !== "string") {
      throw new PermanentError('http handler: the payload needs a "url" string', {
        code: "bad_payload",
      });
    }
    let url: URL;
    try {
      url = new URL(payload.url);
    } catch {
      throw new PermanentError(`http handler: not a URL: ${payload.url}`, { code: "bad_payload" });
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") {
      throw new PermanentError("http handler: only http and https URLs", { code: "bad_payload" });
    }
    const extra = isObject(payload.headers) ? (payload.headers as Record<string, unknown>) : {};
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(extra)) {
      if (typeof value === "string") headers[name] = value;
    }
    Object.assign(headers, {
      "content-type": "application/json",
      "idempotency-key": ctx.idempotencyKey ?? ctx.taskId,
      "x-chronofence-fencing-token": ctx.fencingToken,
      "x-chronofence-task-id": ctx.taskId,
      "x-chronofence-attempt": String(ctx.attempt),
    });
    const body = JSON.stringify("body" in payload ? payload.body : payload);
    const request = { url, method: "POST" as const, headers, body, signal: ctx.signal };
    const options = { policy, maxResponseBytes: MAX_RESPONSE_BYTES, ...(resolve && { resolve }) };
    const response = await safeFetch(request, options).catch((error: unknown) => {
      if (ctx.signal.aborted) throw ctx.signal.reason;
      if (error instanceof EgressRefusedError) throw error;
      throw Object.assign(new Error(`http handler: ${(error as Error).message}`), {
        code: "network_error",
        cause: error,
      });
    });
    const { status } = response;
    if (status >= 200 && status < 300) return { status, body: jsonOrText(response.text) };
    const retryable = status >= 500 || status === 408 || status === 429;
    const redirect = status >= 300 && status < 400 ? " (redirects are not followed)" : "";
    throw Object.assign(new Error(`http handler: ${url.host} answered ${status}${redirect}`), {
      code: `http_${status}`,
      retryable,
    });
  };

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

function numberField(payload: unknown, name: string): number {
  const value = isObject(payload) ? payload[name] : undefined;
  if (typeof value !== "number" || !Number.isFinite(value) || value < 0) {
    throw new PermanentError(`the payload needs a non-negative number "${name}"`, {
      code: "bad_payload",
    });
  }
  return value;
}

function jsonOrText(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
