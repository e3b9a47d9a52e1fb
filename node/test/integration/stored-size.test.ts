/**
 * Payload limits measure what Postgres stores and prints back, not what the
 * client sent: storedJsonBytes agrees with octet_length(jsonb::text) on
 * thousands of seeded values (numbers of every magnitude, escapes, Unicode,
 * nesting), and a 64 KiB body of `5e-324` — about 3 MB as stored — is a 413
 * that writes nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { storedJsonBytes } from "../../src/domain/json-limits.js";
import { type ApiFixture, call, startApiFixture } from "./support/api.js";
import { withPg } from "./support/services.js";

const SEED = Number(process.env.CF_PROPERTY_SEED ?? Date.now() % 2 ** 31);
let fixture: ApiFixture;

beforeAll(async () => {
  console.log(`stored-size: CF_PROPERTY_SEED=${SEED}`);
  fixture = await startApiFixture({}, { maxPayloadBytes: 64 * 1024 });
});

afterAll(async () => {
  await fixture?.stop();
});

function prng(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number) => Math.floor(next() * n);
  return { next, int, pick: <T>(items: readonly T[]) => items[int(items.length)]! };
}

type Rng = ReturnType<typeof prng>;

function number(rng: Rng): number {
  switch (rng.int(6)) {
    case 0:
      return rng.int(2_000_001) - 1_000_000;
    case 1:
      return (rng.next() - 0.5) * 10 ** (rng.int(40) - 20);
    case 2:
      return rng.pick([
        5e-324,
        -5e-324,
        1e-7,
        1.5e-7,
        1e21,
        -1e21,
        1.7976931348623157e308,
        2 ** 53,
      ]);
    case 3:
      return Number(`${rng.int(10)}.${rng.int(1e6)}e${rng.int(600) - 300}`) || 0;
    case 4:
      return rng.next();
    default:
      return -rng.int(100) / 8;
  }
}

function string(rng: Rng): string {
  const pieces = [
    '"',
    "\\",
    "\n",
    "\t",
    "\u0001",
    "\u001f",
    "\u007f",
    "é",
    "€",
    "😀",
    ",",
    ":",
    "a",
    " ",
  ];
  return Array.from({ length: rng.int(8) }, () => rng.pick(pieces)).join("");
}

function value(rng: Rng, depth: number): unknown {
  const kind = depth > 4 ? rng.int(4) : rng.int(6);
  switch (kind) {
    case 0:
      return number(rng);
    case 1:
      return string(rng);
    case 2:
      return rng.pick([true, false, null]);
    case 3:
      return rng.int(3) === 0 ? [] : {};
    case 4:
      return Array.from({ length: rng.int(5) }, () => value(rng, depth + 1));
    default:
      return Object.fromEntries(
        Array.from({ length: rng.int(5) }, () => [string(rng), value(rng, depth + 1)]),
      );
  }
}

describe("stored payload size", () => {
  it("storedJsonBytes is what Postgres stores, for seeded values", async () => {
    const rng = prng(SEED);
    const texts = Array.from({ length: 3000 }, () => JSON.stringify(value(rng, 0)));
    const lengths = await withPg(fixture.db.url, async (c) => {
      const r = await c.query(
        "SELECT octet_length(t::jsonb::text) AS n FROM unnest($1::text[]) WITH ORDINALITY AS u (t, i) ORDER BY i",
        [texts],
      );
      return r.rows.map((row) => row.n as number);
    });
    const wrong = texts
      .map((text, i) => ({ text, ours: storedJsonBytes(text), postgres: lengths[i] }))
      .filter((c) => c.ours !== c.postgres);
    expect(wrong.slice(0, 5), `seed ${SEED}`).toEqual([]);
  });

  it("refuses a 64 KiB body of 5e-324 (about 3 MB as stored) with 413, writing nothing", async () => {
    const payload = `[${Array.from({ length: 9000 }, () => "5e-324").join(",")}]`;
    const answer = await call(fixture.api.baseUrl, "POST", "/v1/tasks", {
      key: fixture.tenant.apiKey,
      rawBody: `{"type":"tiny.numbers","payload":${payload}}`,
    });
    expect(answer.status).toBe(413);
    expect(answer.body.error.details.stored_bytes).toBeGreaterThan(2_900_000);
    const written = await withPg(fixture.db.url, (c) =>
      c.query("SELECT count(*)::int AS n FROM tasks WHERE type = 'tiny.numbers'"),
    );
    expect(written.rows[0].n).toBe(0);
    // The same numbers written out in full fit when they are few.
    const few = await call(fixture.api.baseUrl, "POST", "/v1/tasks", {
      key: fixture.tenant.apiKey,
      rawBody: `{"type":"tiny.numbers","payload":[${Array(100).fill("5e-324").join(",")}]}`,
    });
    expect(few.status).toBe(201);
  });
});
