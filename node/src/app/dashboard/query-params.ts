/**
 * Parsing of the dashboard routes' query parameters: every bad value is a
 * 400 `invalid_request` naming the parameter, never a 500 or a silent default.
 */
import { ChronofenceError, ErrorCode } from "../../domain/errors.js";

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const badQuery = (field: string, value: string) =>
  new ChronofenceError(ErrorCode.InvalidRequest, `invalid query parameter ${field}`, {
    details: { field, value: value.slice(0, 64) },
  });

export const notFound = (what: string, id: string) =>
  new ChronofenceError(ErrorCode.NotFound, `${what} not found`, {
    details: { id: id.slice(0, 64) },
  });

/** An integer in [min, max], or `fallback` when absent. */
export function intParam(
  params: URLSearchParams,
  name: string,
  min: number,
  max: number,
  fallback: number,
): number {
  const raw = params.get(name);
  if (raw === null) return fallback;
  const value = Number(raw);
  if (!/^\d{1,9}$/.test(raw) || value < min || value > max) throw badQuery(name, raw);
  return value;
}

export function uuidParam(params: URLSearchParams, name: string): string | undefined {
  const raw = params.get(name);
  if (raw === null || raw === "") return undefined;
  if (!UUID.test(raw)) throw badQuery(name, raw);
  return raw.toLowerCase();
}

/** An RFC 3339 instant with an offset (as run_at is given at submission), as epoch ms. */
export function instantParam(params: URLSearchParams, name: string): number | undefined {
  const raw = params.get(name);
  if (raw === null || raw === "") return undefined;
  const valid = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?([Zz]|[+-]\d{2}:\d{2})$/;
  const ms = Date.parse(raw);
  if (!valid.test(raw) || Number.isNaN(ms)) throw badQuery(name, raw);
  return ms;
}

/** One of `allowed`, or undefined when absent. */
export function enumParam<T extends string>(
  params: URLSearchParams,
  name: string,
  allowed: readonly T[],
): T | undefined {
  const raw = params.get(name);
  if (raw === null || raw === "") return undefined;
  if (!allowed.includes(raw as T)) throw badQuery(name, raw);
  return raw as T;
}

/** The creation instant a UUIDv7 carries in its first 48 bits. */
export const uuidv7Ms = (id: string): number =>
  Number.parseInt(id.replace(/-/g, "").slice(0, 12), 16);
