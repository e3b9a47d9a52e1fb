/**
 * Creating the chaos run's schedules when a create committed but its answer
 * was lost (found by chaos seed 104: the retry answered 409 name_taken and
 * the run died before its workload started).
 */
import { describe, expect, it } from "vitest";
import { createSchedule } from "../../../../bench/chaos/workload.js";

type Answer = { status: number; body: unknown; answeredAtMs: number };

/** A client whose answers are scripted per path, recording what was asked. */
function scripted(answers: Record<string, Answer[]>) {
  const asked: string[] = [];
  return {
    asked,
    client: {
      // biome-ignore lint/suspicious/noExplicitAny: the harness client's answer bodies are untyped JSON
      async retrying(_op: string, _key: string, method: string, path: string): Promise<any> {
        asked.push(`${method} ${path}`);
        const next = answers[`${method} ${path}`]?.shift();
        if (!next) throw new Error(`unexpected ${method} ${path}`);
        return next;
      },
    },
  };
}

describe("createSchedule", () => {
  it("takes the 201's id and instant", async () => {
    const { client } = scripted({
      "POST /v1/schedules": [{ status: 201, body: { id: "s1" }, answeredAtMs: 5 }],
    });
    expect(await createSchedule(client, "op", "k", { name: "a" })).toEqual({
      id: "s1",
      createdAtMs: 5,
    });
  });

  it("after a 409 name_taken, finds the schedule the lost answer created, by name", async () => {
    const { client, asked } = scripted({
      "POST /v1/schedules": [
        { status: 409, body: { error: { code: "name_taken" } }, answeredAtMs: 9 },
      ],
      "GET /v1/schedules?limit=1000": [
        {
          status: 200,
          body: {
            schedules: [
              { id: "other", name: "b" },
              { id: "mine", name: "a" },
            ],
          },
          answeredAtMs: 10,
        },
      ],
    });
    expect(await createSchedule(client, "op", "k", { name: "a" })).toEqual({
      id: "mine",
      createdAtMs: 9,
    });
    expect(asked).toEqual(["POST /v1/schedules", "GET /v1/schedules?limit=1000"]);
  });

  it("fails clearly when the name is not found or the create was refused", async () => {
    const missing = scripted({
      "POST /v1/schedules": [{ status: 409, body: {}, answeredAtMs: 1 }],
      "GET /v1/schedules?limit=1000": [{ status: 200, body: { schedules: [] }, answeredAtMs: 2 }],
    });
    await expect(createSchedule(missing.client, "op", "k", { name: "a" })).rejects.toThrow(
      /creating schedule a answered 409/,
    );
    const refused = scripted({
      "POST /v1/schedules": [{ status: 422, body: {}, answeredAtMs: 1 }],
    });
    await expect(createSchedule(refused.client, "op", "k", { name: "a" })).rejects.toThrow(/422/);
  });
});
