import { describe, expect, it } from "vitest";
import { ExecutionService } from "../../../src/app/execution/execution-service.js";
import type { ExecutionStore } from "../../../src/ports/execution-store.js";
import type { DueEntry } from "../../../src/ports/hot-tier.js";

describe("released workflow nodes after a completion", () => {
  it("adds the released tasks due within the window, and nothing when none is", async () => {
    const added: DueEntry[][] = [];
    const hotTier = {
      addDue: async (entries: readonly DueEntry[]) => void added.push([...entries]),
    };
    const soon = { tenantId: "t", taskId: "a", runAtMs: 1_000 };
    const later = { tenantId: "t", taskId: "b", runAtMs: 9_000 };
    let released: DueEntry[] = [];
    const store = {
      complete: async () => ({ kind: "completed", released }),
    } as unknown as ExecutionStore;
    const service = new ExecutionService(
      { store, hotTier, onError: () => undefined },
      { hotWindowMs: 5_000 },
    );
    const ref = { tenantId: "t", taskId: "p", fencingToken: "1" };
    released = [soon, later];
    await service.complete(ref, "null", 0);
    released = [later];
    await service.complete(ref, "null", 0);
    expect(added).toEqual([[soon]]);
  });
});
