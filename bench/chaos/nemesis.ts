/**
 * The nemesis: carries out the seed's plan (nemesis-plan.ts) on a chaos
 * topology, one fault at a time, and records what it did and when (the
 * report's fault windows). Every fault is healed in a `finally`, whatever
 * went wrong while it was held, and `healAll` at the end of a run brings
 * everything back regardless: proxies healed, paused processes continued,
 * Postgres, Redis and Kafka running, skewed clocks set right, every process
 * alive.
 */
import type { PlannedFault } from "./nemesis-plan.js";
import type { ManagedProcess } from "./processes.js";
import type { Random } from "./random.js";
import { leaderOf, type Topology } from "./topology.js";

export interface FaultRecord {
  kind: string;
  target: string;
  startMs: number;
  /** When the heal completed (the service or process is back). */
  endMs: number;
  detail: string;
  error?: string;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export class Nemesis {
  readonly records: FaultRecord[] = [];
  private stopped = false;

  constructor(
    private readonly topology: Topology,
    private readonly random: Random,
  ) {}

  /** Runs the plan from `startedAtMs`; stops between faults once `stop()` is called. */
  async run(plan: readonly PlannedFault[], startedAtMs: number, minGapMs: number): Promise<void> {
    let notBeforeMs = startedAtMs;
    for (const fault of plan) {
      const atMs = Math.max(startedAtMs + fault.atMs, notBeforeMs);
      while (!this.stopped && Date.now() < atMs) await sleep(Math.min(250, atMs - Date.now()));
      if (this.stopped) return;
      await this.inject(fault);
      notBeforeMs = Date.now() + minGapMs;
    }
  }

  stop(): void {
    this.stopped = true;
  }

  private async inject(fault: PlannedFault): Promise<void> {
    const startMs = Date.now();
    const record: FaultRecord = {
      kind: fault.kind,
      target: fault.target,
      startMs,
      endMs: 0,
      detail: "",
    };
    try {
      record.detail = await this.act(fault, record);
    } catch (error) {
      record.error = (error as Error).message;
    } finally {
      record.endMs = Date.now();
      this.records.push(record);
    }
  }

  /** Injects, holds and heals one fault; returns a line saying what it did. */
  private async act(fault: PlannedFault, record: FaultRecord): Promise<string> {
    const t = this.topology;
    switch (fault.kind) {
      case "kill": {
        const p = t.byName(fault.target);
        await p.kill9();
        await sleep(fault.holdMs);
        await p.start();
        return `kill -9 ${p.name}, restarted after ${fault.holdMs} ms as ${p.nodeId}`;
      }
      case "pause":
      case "pause_leader": {
        const p =
          fault.kind === "pause"
            ? t.byName(fault.target)
            : ((await leaderOf(t)) ?? this.random.pick(t.ofKind("dispatch")));
        record.target = p.name;
        return this.held(
          () => p.pause(),
          () => p.resume(),
          fault.holdMs,
          `SIGSTOP ${p.nodeId} for ${fault.holdMs} ms, then SIGCONT`,
        );
      }
      case "redis_flush":
        await t.redis.flushAll();
        return "FLUSHALL";
      case "redis_restart":
        return this.held(
          () => t.redis.stop(),
          () => t.redis.ensureRunning(),
          fault.holdMs,
          `redis-server killed, started again after ${fault.holdMs} ms`,
        );
      case "kafka_restart":
        return this.held(
          () => t.kafka.stop(),
          () => t.kafka.ensureRunning(),
          fault.holdMs,
          `broker stopped, started again after ${fault.holdMs} ms`,
        );
      case "postgres_restart": {
        const mode = fault.value === 1 ? "immediate" : "fast";
        return this.held(
          () => t.postgres.stop(mode),
          () => t.postgres.ensureRunning(),
          fault.holdMs,
          `postgres stopped (${mode}), started again after ${fault.holdMs} ms`,
        );
      }
      case "partition_postgres":
      case "partition_redis":
      case "partition_kafka": {
        const service = fault.kind.slice("partition_".length) as "postgres" | "redis" | "kafka";
        const proxy = t.proxies[service][Number(fault.target) - 1]!;
        return this.held(
          () => proxy.partition(),
          () => proxy.heal(),
          fault.holdMs,
          `node ${fault.target} cut off from ${service} for ${fault.holdMs} ms`,
        );
      }
      case "clock_skew":
      case "clock_ahead": {
        const p = t.byName(fault.target);
        return this.held(
          () => restartWithOffset(p, fault.value),
          () => restartWithOffset(p, 0),
          fault.holdMs,
          `${p.name} restarted with its clock ${fault.value} ms off for ${fault.holdMs} ms`,
        );
      }
    }
  }

  private async held(
    inject: () => Promise<void> | void,
    heal: () => Promise<void> | void,
    holdMs: number,
    detail: string,
  ): Promise<string> {
    try {
      await inject();
      await sleep(holdMs);
    } finally {
      await heal();
    }
    return detail;
  }

  /** Everything back, whatever state the run ended in. */
  async healAll(): Promise<void> {
    const t = this.topology;
    for (const proxy of [...t.proxies.postgres, ...t.proxies.redis, ...t.proxies.kafka])
      proxy.heal();
    for (const p of t.processes) p.resume();
    await t.postgres.ensureRunning();
    await t.redis.ensureRunning();
    await t.kafka.ensureRunning();
    for (const p of t.processes) {
      if (p.clockOffsetMs !== 0) await restartWithOffset(p, 0);
      else if (!p.alive) await p.start();
    }
  }
}

/** A graceful restart (SIGTERM: it drains) with CF_CLOCK_OFFSET_MS set, or cleared for 0. */
async function restartWithOffset(p: ManagedProcess, offsetMs: number): Promise<void> {
  await p.terminate();
  p.setExtraEnv(offsetMs === 0 ? {} : { CF_CLOCK_OFFSET_MS: String(offsetMs) });
  await p.start();
}
