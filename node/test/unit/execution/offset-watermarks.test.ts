import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { OffsetWatermarks } from "../../../src/adapters/kafka/offset-watermarks.js";
import { propertyParams } from "../../support/property.js";

describe("OffsetWatermarks", () => {
  it("commits just past the longest done prefix of each partition", () => {
    const w = new OffsetWatermarks();
    const a = [10, 11, 12].map((o) => w.begin(0, String(o)));
    const b = w.begin(1, "5");
    w.done(a[1]!);
    expect(w.pending()).toEqual([]);
    w.done(a[0]!);
    w.done(b);
    expect(w.pending()).toEqual([
      { partition: 0, offset: "12" },
      { partition: 1, offset: "6" },
    ]);
    w.committed(w.pending());
    expect(w.pending()).toEqual([]);
    w.done(a[2]!);
    expect(w.pending()).toEqual([{ partition: 0, offset: "13" }]);
  });

  it("counts what it retains: everything behind an unfinished offset, until that one is done", () => {
    const w = new OffsetWatermarks();
    const [slow, ...rest] = [1, 2, 3, 4].map((o) => w.begin(0, String(o)));
    for (const h of rest) w.done(h);
    expect(w.retained).toBe(4);
    w.done(slow!);
    expect(w.retained).toBe(0);
    w.begin(1, "7");
    w.reset();
    expect(w.retained).toBe(0);
  });

  it("keeps offsets beyond 2^53 exact", () => {
    const w = new OffsetWatermarks();
    w.done(w.begin(0, "9007199254740993"));
    expect(w.pending()).toEqual([{ partition: 0, offset: "9007199254740994" }]);
  });

  it("forgets an earlier generation: its late completions commit nothing", () => {
    const w = new OffsetWatermarks();
    const old = w.begin(0, "1");
    w.reset();
    w.done(old);
    expect(w.pending()).toEqual([]);
    const fresh = w.begin(0, "1");
    w.done(fresh);
    expect(w.pending()).toEqual([{ partition: 0, offset: "2" }]);
  });

  it("never commits past an unfinished offset, whatever the completion order", () => {
    fc.assert(
      fc.property(
        fc.array(fc.boolean(), { minLength: 1, maxLength: 3000 }),
        fc.integer({ min: 0, max: 2 ** 31 }),
        (finishes, seed) => {
          const w = new OffsetWatermarks();
          const handouts = finishes.map((_, i) => w.begin(0, String(i)));
          // Complete the ones marked true, in a scrambled order.
          const order = handouts.map((h, i) => ({ h, key: (i * 2654435761 + seed) % 4294967296 }));
          order.sort((x, y) => x.key - y.key);
          for (const { h } of order) if (finishes[Number(h.offset)]) w.done(h);
          const firstUnfinished = finishes.indexOf(false);
          const expected = firstUnfinished === -1 ? finishes.length : firstUnfinished;
          const [commit] = w.pending();
          expect(commit?.offset ?? "0").toBe(expected === 0 ? "0" : String(expected));
        },
      ),
      propertyParams(),
    );
  });
});
