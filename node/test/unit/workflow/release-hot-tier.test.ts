import { describe, expect, it } from "vitest";
import { addReleasedToHotTier } from "../../../src/adapters/pg/workflow-release.js";
import type { DueEntry } from "../../../src/ports/hot-tier.js";

describe("addReleasedToHotTier", () => {
  it("adds the released tasks due within the window, and nothing when none is", async () => {
    const added: DueEntry[][] = [];
    const hotTier = {
      addDue: async (entries: readonly DueEntry[]) => void added.push([...entries]),
    };
    const soon = { tenantId: "t", taskId: "a", runAtMs: 1_000 };
    const later = { tenantId: "t", taskId: "b", runAtMs: 9_000 };
    await addReleasedToHotTier(hotTier, [soon, later], 5_000);
    await addReleasedToHotTier(hotTier, [later], 5_000);
    expect(added).toEqual([[soon]]);
  });
});
