/**
 * The parts the dashboard routes' query schemas are built of (composed in
 * dashboard-requests.ts), and the one parser that runs them. A query
 * parameter is text, so each schema takes a string and says what it turns
 * into; the OpenAPI document describes each parameter with the very schema
 * that validates it (openapi/dashboard-operations.ts).
 *
 * Every bad value is a 400 `invalid_request` naming the parameter
 * (`details.field`, `details.value`), never a 500 or a silent default.
 * An empty filter (`status=`, as a form sends a blank field) is absent; an
 * empty number (`limit=`) is refused. A parameter given twice counts once,
 * as its first value; parameters no schema names are ignored.
 */
import { z } from "zod";
import { ChronofenceError, ErrorCode } from "../../domain/errors.js";
import { UUID } from "../../domain/uuid.js";

/** RFC 3339 with an offset, as run_at is given at submission (seconds optional, `T` or a space). */
const INSTANT = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?([Zz]|[+-]\d{2}:\d{2})$/;

export const badQuery = (field: string, value: string) =>
  new ChronofenceError(ErrorCode.InvalidRequest, `invalid query parameter ${field}`, {
    details: { field, value: value.slice(0, 64) },
  });

export const notFound = (what: string, id: string) =>
  new ChronofenceError(ErrorCode.NotFound, `${what} not found`, {
    details: { id: id.slice(0, 64) },
  });

/** `schema`, or absent when the parameter is missing or empty. */
export const blankIsAbsent = <T extends z.ZodType<unknown, string>>(schema: T) =>
  z.union([z.literal("").transform(() => undefined), schema]).optional();

/** A whole number in [min, max] (digits only, at most 9), `fallback` when missing. */
export const intQuery = (min: number, max: number, fallback: number) =>
  z
    .string()
    .regex(/^\d{1,9}$/)
    .transform(Number)
    .pipe(z.number().int().min(min).max(max))
    .default(fallback);

/** One of `values`. */
export const enumQuery = <const T extends readonly [string, ...string[]]>(values: T) =>
  blankIsAbsent(z.enum(values));

/** A UUID in any case, as lowercase. */
export const uuidQuery = () =>
  blankIsAbsent(
    z
      .string()
      .regex(UUID)
      .transform((id) => id.toLowerCase()),
  );

/** An RFC 3339 instant with an offset, as epoch ms. */
export const instantQuery = () =>
  blankIsAbsent(
    z
      .string()
      .regex(INSTANT)
      .transform((text, ctx) => {
        const ms = Date.parse(text);
        if (!Number.isNaN(ms)) return ms;
        ctx.addIssue({ code: "custom", message: "not an instant" });
        return z.NEVER;
      }),
  );

/** The query string parsed by `schema` (an object of the schemas above); 400 at the first bad parameter. */
export function parseQuery<S extends z.ZodObject>(schema: S, query: string): z.output<S> {
  const params = new URLSearchParams(query);
  const input: Record<string, string> = {};
  for (const name of Object.keys(schema.shape)) {
    const value = params.get(name);
    if (value !== null) input[name] = value;
  }
  const parsed = schema.safeParse(input);
  if (parsed.success) return parsed.data;
  const field = String(parsed.error.issues[0]?.path[0] ?? "");
  throw badQuery(field, input[field] ?? "");
}

/** The creation instant a UUIDv7 carries in its first 48 bits. */
export const uuidv7Ms = (id: string): number =>
  Number.parseInt(id.replace(/-/g, "").slice(0, 12), 16);
