/**
 * What a task, tenant, workflow or schedule id looks like: a UUID in either
 * case. An id that is not one can match no row, so callers answer "not found"
 * (or refuse a cursor) without asking Postgres, which would refuse the cast.
 * Spelled out rather than flagged /i: a JSON Schema pattern carries no flags.
 */
export const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

export const isUuid = (value: unknown): value is string =>
  typeof value === "string" && UUID.test(value);
