/**
 * The infrastructure the roles of one `chronofence run` process share: the
 * services' (role-connections.ts), except the queues of CF_DIRECT_QUEUES,
 * which this process keeps to itself in memory ("direct" mode,
 * adapters/memory/direct-transport.ts). A direct queue needs its dispatcher
 * and its worker in this process, the worker consuming it: refused otherwise,
 * at start, rather than fire envelopes nobody takes.
 */
import { directTransport } from "../adapters/memory/direct-transport.js";
import { MemoryTransport } from "../adapters/memory/memory-transport.js";
import type { Config } from "../config/config.js";
import { TOPICS, type TopicKind } from "../domain/envelope.js";
import { type RoleInfrastructure, serviceInfrastructure } from "./role-connections.js";
import { directQueuesOf, queuesOf } from "./worker.js";

export function runInfrastructure(config: Config, roles: readonly string[]): RoleInfrastructure {
  const infra = serviceInfrastructure(config);
  if (config.directQueues === "") return infra;
  const direct = directQueuesOf(config);
  if (!roles.includes("dispatcher") || !roles.includes("worker")) {
    throw new Error(
      `CF_DIRECT_QUEUES=${config.directQueues} needs the dispatcher and the worker roles in this process (--roles ${roles.join(",")}): a direct queue's envelopes go to this process's own worker`,
    );
  }
  const consumed = queuesOf(config);
  const unconsumed = [...direct].filter((kind) => !consumed.includes(kind));
  if (unconsumed.length > 0) {
    throw new Error(
      `CF_DIRECT_QUEUES names ${unconsumed.join(", ")}, which this worker does not consume (CF_WORKER_QUEUES=${config.workerQueues})`,
    );
  }
  const memory = new MemoryTransport();
  // Every queue direct: this process needs no broker at all.
  const transport =
    direct.size === TOPICS.length ? memory : directTransport(infra.transport, memory, direct);
  return { ...infra, transport };
}
