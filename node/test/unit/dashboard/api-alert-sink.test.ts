/** The watchdog's report to the API (api-alert-sink.ts): never fails a transition, sends again what did not land. */
import { describe, expect, it } from "vitest";
import { ApiAlertSink } from "../../../src/adapters/alerts/api-alert-sink.js";
import type { ChronofenceClient } from "../../../src/client/client.js";

const canary = { key: "canary", kind: "canary" as const, message: "late", details: { age_ms: 1 } };

describe("API alert sink", () => {
  it("resolves while the API is down, and flush sends the latest state of each alert once it is back", async () => {
    const sent: Array<{ key: string; state: string }> = [];
    let up = false;
    const client = {
      watchdog: {
        reportAlert: async (body: { key: string; state: string }) => {
          if (!up) throw new Error("API unreachable");
          sent.push({ key: body.key, state: body.state });
        },
      },
    } as unknown as ChronofenceClient;
    const errors: unknown[] = [];
    const sink = new ApiAlertSink(client, (e) => errors.push(e));
    await expect(sink.fire(canary)).resolves.toBeUndefined();
    await sink.resolve(canary);
    await sink.fire({ ...canary, key: "schedule:1", kind: "dead_mans_switch" });
    expect(errors).toHaveLength(3);
    await sink.flush(); // still down: nothing lands, nothing is lost
    expect(sent).toEqual([]);
    up = true;
    await sink.flush();
    expect(sent).toEqual([
      { key: "canary", state: "resolved" },
      { key: "schedule:1", state: "firing" },
    ]);
    await sink.flush();
    expect(sent).toHaveLength(2);

    // One that lands does not take another's place in the queue.
    up = false;
    await sink.resolve({ ...canary, key: "schedule:1", kind: "dead_mans_switch" });
    up = true;
    await sink.fire({ ...canary, key: "schedule:2", kind: "dead_mans_switch" });
    await sink.flush();
    expect(sent.slice(2)).toEqual([
      { key: "schedule:2", state: "firing" },
      { key: "schedule:1", state: "resolved" },
    ]);
  });
});
