/**
 * API keys: their format, and what a key may do (docs/operations.md, "API key scopes"). Each route
 * requires one scope (adapters/http/route-scopes.ts); a key outside it gets
 * 403 `forbidden`. Keys made before scopes existed have every scope but
 * `admin` (migrations/000010_api_key_scopes.sql).
 *
 *   submit   create and cancel tasks, workflows and schedules; replay dead tasks
 *   read     read them
 *   execute  the worker protocol (/v1/executions/...): a fencing token is a
 *            sequence number anyone can guess, so the key is the credential
 *   admin    nothing over HTTP yet: reserved for operator routes
 */
/**
 * What every key the CLI makes looks like: `cfk_` and 43 base64url characters
 * (256 random bits). Anything else cannot be a key, so it is refused without
 * asking the database.
 */
export const API_KEY_PATTERN = /^cfk_[A-Za-z0-9_-]{43}$/;

export const SCOPES = ["submit", "read", "execute", "admin"] as const;
export type Scope = (typeof SCOPES)[number];

/** A new key's scopes when none are named, and those of keys made before scopes existed. */
export const DEFAULT_KEY_SCOPES: readonly Scope[] = ["submit", "read", "execute"];

export const isScope = (value: string): value is Scope =>
  (SCOPES as readonly string[]).includes(value);

/** `submit,read` → the scopes, or the names that are not scopes. */
export function parseScopes(
  text: string,
): { ok: true; scopes: Scope[] } | { ok: false; unknown: string[] } {
  const names = [...new Set(text.split(",").map((s) => s.trim()))].filter((s) => s !== "");
  const unknown = names.filter((s) => !isScope(s));
  if (unknown.length > 0 || names.length === 0) return { ok: false, unknown };
  return { ok: true, scopes: SCOPES.filter((s) => names.includes(s)) };
}
