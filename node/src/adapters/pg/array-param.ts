/**
 * Array parameters as Postgres array literals (`{a,b,NULL}`), for the hot
 * batched statements. node-pg turns a JavaScript array into that text itself,
 * but quotes and escapes every element with two regular-expression replaces
 * and a chain of concatenations: at 5,000 tasks/s that was the largest single
 * source of garbage in a direct-mode node (9 % of the bytes it allocated,
 * bench/RESULTS.md, session 10). The text is the same array to Postgres.
 */

/** Element text that needs no quotes in an array literal (uuids, bigint tokens, numbers). */
const PLAIN = /^[0-9A-Za-z.+-]+$/;

/**
 * Elements that need no quoting: numbers, and strings such as uuids and
 * decimal tokens. A string that would need quotes throws: the callers pass
 * values they have already validated, and a wrong literal would name other
 * rows.
 */
export function plainArray(values: ReadonlyArray<string | number | null | undefined>): string {
  let text = "{";
  for (let i = 0; i < values.length; i++) {
    const value = values[i];
    if (i > 0) text += ",";
    if (value === null || value === undefined) text += "NULL";
    else if (typeof value === "number") text += String(value);
    else if (PLAIN.test(value) && !(value.length === 4 && value.toUpperCase() === "NULL"))
      text += value;
    else throw new TypeError(`not a plain array element: ${JSON.stringify(value)}`);
  }
  return `${text}}`;
}

/** Any strings: each one quoted, its backslashes and double quotes escaped. */
export function textArray(values: readonly string[]): string {
  let text = "{";
  for (let i = 0; i < values.length; i++) {
    if (i > 0) text += ",";
    text += `"${values[i]!.replace(/[\\"]/g, "\\$&")}"`;
  }
  return `${text}}`;
}
