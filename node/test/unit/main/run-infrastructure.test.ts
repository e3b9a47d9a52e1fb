/**
 * Which transport a `chronofence run` process gives its roles
 * (main/run-infrastructure.ts): the services' by default; its own memory for
 * every queue when CF_DIRECT_QUEUES names them all (no broker needed); a
 * mix otherwise; and a clear refusal when a direct queue would have nobody
 * to run it in this process.
 */
import { describe, expect, it } from "vitest";
import { MemoryTransport } from "../../../src/adapters/memory/memory-transport.js";
import { resolveConfig } from "../../../src/config/config.js";
import { runInfrastructure } from "../../../src/main/run-infrastructure.js";

const ALL_ROLES = ["dispatcher", "preloader", "reconciler", "worker"];
const config = (env: Record<string, string>) => resolveConfig(env);

describe("a run process's transport", () => {
  it("is Kafka's without CF_DIRECT_QUEUES", () => {
    const infra = runInfrastructure(config({}), ALL_ROLES);
    expect(infra.transport).not.toBeInstanceOf(MemoryTransport);
  });

  it("is this process's memory alone when every queue is direct", () => {
    const infra = runInfrastructure(
      config({ CF_DIRECT_QUEUES: "critical,standard,bulk,overdue" }),
      ALL_ROLES,
    );
    expect(infra.transport).toBeInstanceOf(MemoryTransport);
  });

  it("mixes the two when some are", () => {
    const infra = runInfrastructure(config({ CF_DIRECT_QUEUES: "critical" }), ALL_ROLES);
    expect(infra.transport).not.toBeInstanceOf(MemoryTransport);
  });

  it("is refused without the dispatcher and the worker in the process", () => {
    const direct = config({ CF_DIRECT_QUEUES: "standard" });
    expect(() => runInfrastructure(direct, ["worker"])).toThrow(
      /needs the dispatcher and the worker roles in this process/,
    );
    expect(() => runInfrastructure(direct, ["dispatcher", "preloader"])).toThrow(
      /needs the dispatcher and the worker roles/,
    );
  });

  it("is refused for a direct queue the worker does not consume", () => {
    const direct = config({ CF_DIRECT_QUEUES: "bulk,critical", CF_WORKER_QUEUES: "critical" });
    expect(() => runInfrastructure(direct, ALL_ROLES)).toThrow(/names bulk, which this worker/);
  });

  it("is refused for a queue that does not exist", () => {
    expect(() => config({ CF_DIRECT_QUEUES: "urgent" })).toThrow(/CF_DIRECT_QUEUES/);
  });
});
