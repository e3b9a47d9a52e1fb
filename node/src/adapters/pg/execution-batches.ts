/**
 * The worker's coalesced starts and completions (login role only): the calls
 * of one event-loop turn that name their run_at become one statement
 * (coalescer.ts): STEP_MANY when the turn has both, else START_MANY or
 * COMPLETE_MANY; each caller gets its own row, or null when its fenced test
 * matched nothing. A turn with both saves a round trip, an executor start
 * and a commit: at low rates a statement carries a task or two, and its
 * fixed cost is most of what it costs Postgres and the worker
 * (bench/RESULTS.md, session 22). A statement that lost a race with a
 * partition move or a deadlock is run again here, for the whole batch
 * (FencedCalls.withRetries): the callers' refs are already checked
 * (FencedCalls.wellFormed), so they need none of `fenced`'s wrapping.
 *
 * A batch whose run_at all fall on one UTC day (nearly every batch) runs
 * as a prepared statement on that day's partition (day-partition.ts; through
 * `tasks`, planning took about half of Postgres' time at 1,000 tasks/s).
 */

import type { ExecutionRef } from "../../ports/execution-store.js";
import type { DueEntry } from "../../ports/hot-tier.js";
import { plainArray, textArray } from "./array-param.js";
import { Coalescer, type Settled } from "./coalescer.js";
import { type DayPartitionStatement, onDayPartition, runAtDays } from "./day-partition.js";
import { DAY_MS, isoOfMs } from "./epoch-ms.js";
import { isDataException } from "./errors.js";
import type { FencedCalls } from "./fenced-calls.js";
import type { PgPool } from "./pool.js";
import { releaseTerminal } from "./release-terminal.js";
import {
  COMPLETE_MANY,
  COMPLETE_MANY_OUTSIDE_WORKFLOWS,
  completeMany,
  START_MANY,
  STEP_MANY,
  startMany,
  stepMany,
} from "./sql/execution.js";

type RefWithRunAt = ExecutionRef & { runAtMs: number };

export interface StartInput {
  ref: RefWithRunAt;
  workerId: string;
  leaseMs: number;
  nowMs: number;
}
export interface CompleteInput {
  ref: RefWithRunAt;
  resultJson: string;
  nowMs: number;
}
// biome-ignore lint/suspicious/noExplicitAny: a row of START_MANY, read field by field
export type StartRow = any;
// biome-ignore lint/suspicious/noExplicitAny: a row of START_MANY or COMPLETE_MANY
type Row = any;

/** A call of the turn: a start or a completion. */
type Step =
  | { start: StartInput; complete?: undefined }
  | { complete: CompleteInput; start?: undefined };
/** A start's row (null: stale), or a completion's released nodes (null: stale). */
type StepAnswer = StartRow | DueEntry[] | null;

/**
 * Starts and completions a second from which the busy linger holds them:
 * about 2,000 tasks/s. At 5,000/s in one process one statement at a time
 * still ran about 450 a second, each with its commit; a linger held by the
 * last batch's size instead made the p99 at 1,000/s worse in Kafka mode,
 * whose fetches come in bursts (bench/RESULTS.md, session 33).
 */
const BUSY_STEP_CALLS_PER_S = 4000;

/** As PgExecutionStoreOptions' coalesce options say (execution-store.ts). */
export interface ExecutionBatchOptions {
  maxBatch: number;
  maxInFlight: number;
  completionLingerMs: number;
  busyLingerMs: number;
  nowMs?: () => number;
}

export class ExecutionBatches {
  private readonly steps: Coalescer<Step, StepAnswer>;

  /** Stamps each start when its statement leaves (started_at, the lease's start), not when it was asked for. */
  private readonly nowMs: (() => number) | undefined;

  constructor(
    private readonly pool: PgPool,
    private readonly calls: FencedCalls,
    options: ExecutionBatchOptions,
  ) {
    this.nowMs = options.nowMs;
    this.steps = new Coalescer((inputs) => this.step(inputs), {
      maxBatch: options.maxBatch,
      // One statement out at a time until a batch is full: with two, a start or
      // a completion left nearly alone (1.5 rows per statement at 1,000 tasks/s),
      // and at 5,000/s a task cost about 6 % more CPU (bench/RESULTS.md, session 25).
      partialInFlight: 1,
      maxInFlight: options.maxInFlight,
      lingerMs: options.completionLingerMs,
      // The completion linger holds completions only: a start pending sends the batch in the
      // next turn. The busy linger (measured by the monotonic clock) holds both.
      urgent: (input) => input.start !== undefined,
      busyLingerMs: options.busyLingerMs,
      busyCallsPerS: BUSY_STEP_CALLS_PER_S,
    });
  }

  /** The started row (as START returns it), or null: not ARMED with this token. */
  start(input: StartInput): Promise<StartRow | null> {
    return this.steps.submit({ start: input });
  }

  /** The workflow nodes the completion released, or null: not RUNNING with this token. */
  complete(input: CompleteInput): Promise<DueEntry[] | null> {
    return this.steps.submit({ complete: input }) as Promise<DueEntry[] | null>;
  }

  /** One turn's starts and completions; each caller gets its answer in its place. */
  private async step(inputs: Step[]): Promise<Array<Settled<StepAnswer>>> {
    const starts: StartInput[] = [];
    const completions: CompleteInput[] = [];
    // A start waits for its statement (a linger, the one before it); it starts when that leaves.
    const leftMs = this.nowMs?.() ?? 0;
    for (const input of inputs) {
      if (input.start)
        starts.push(input.start.nowMs < leftMs ? { ...input.start, nowMs: leftMs } : input.start);
      else completions.push(input.complete);
    }
    const [startAnswers, completeAnswers] =
      starts.length === 0
        ? [[], await this.completeMany(completions)]
        : completions.length === 0
          ? [await this.startMany(starts), []]
          : await this.startAndComplete(starts, completions);
    let s = 0;
    let c = 0;
    return inputs.map((input) => (input.start ? startAnswers[s++]! : completeAnswers[c++]!));
  }

  /** The coalesced starts of one event-loop turn: one statement; each caller gets its row or null. */
  private async startMany(inputs: StartInput[]): Promise<Array<Settled<StartRow | null>>> {
    const answers = new Map<StartInput, Settled<StartRow | null>>();
    // One statement per (worker, lease) — in practice one: a store serves one executor.
    for (const group of groupBy(inputs, (i) => `${i.leaseMs}|${i.workerId}`)) {
      const result = await this.calls.withRetries(() =>
        onDayPartition(this.pool, START, refsOf(group), startValues(group)),
      );
      const rows = byIdAndToken(result.rows);
      for (const input of group) answers.set(input, { ok: true, value: take(rows, input.ref) });
    }
    return inputs.map((input) => answers.get(input)!);
  }

  /**
   * Starts and completions of tasks of no workflow in one STEP_MANY; the
   * rest (starts of another worker or lease, workflow nodes' and stale
   * completions) as startMany and completeMany take them. A result Postgres
   * refuses fails the whole statement: then each goes its own way.
   */
  private async startAndComplete(
    starts: StartInput[],
    completions: CompleteInput[],
  ): Promise<[Array<Settled<StartRow | null>>, Array<Settled<DueEntry[] | null>>]> {
    const first = `${starts[0]!.leaseMs}|${starts[0]!.workerId}`;
    if (starts.some((i) => `${i.leaseMs}|${i.workerId}` !== first))
      return Promise.all([this.startMany(starts), this.completeMany(completions)]);
    let rows: { started: Map<string, Row>; completed: Map<string, Row> };
    try {
      const refs = [...refsOf(starts), ...refsOf(completions)];
      const values = [...startValues(starts), ...completeValues(completions)];
      const result = await this.calls.withRetries(() =>
        onDayPartition(this.pool, STEP, refs, values),
      );
      rows = {
        started: byIdAndToken(result.rows.filter((row: Row) => row.started)),
        completed: byIdAndToken(result.rows.filter((row: Row) => !row.started)),
      };
    } catch (error) {
      if (!isDataException(error)) {
        const failed = { ok: false as const, error };
        return [starts.map(() => failed), completions.map(() => failed)];
      }
      return Promise.all([this.startMany(starts), this.completeMany(completions)]);
    }
    const startAnswers = starts.map(
      (input): Settled<StartRow | null> => ({ ok: true, value: take(rows.started, input.ref) }),
    );
    return [startAnswers, await this.completeRest(completions, rows.completed)];
  }

  /**
   * The coalesced completions of one event-loop turn. Tasks of no workflow
   * (nearly all) complete in one statement on its own; what it leaves goes
   * on as completeRest says. A result Postgres refuses (a data exception)
   * would fail a whole statement: then each row goes alone, so only its own
   * caller sees the refusal.
   */
  private async completeMany(inputs: CompleteInput[]): Promise<Array<Settled<DueEntry[] | null>>> {
    let direct: Map<string, Row>;
    try {
      const values = completeValues(inputs);
      const result = await this.calls.withRetries(() =>
        onDayPartition(this.pool, COMPLETE_OUTSIDE_WORKFLOWS, refsOf(inputs), values),
      );
      direct = byIdAndToken(result.rows);
    } catch (error) {
      return this.oneByOneIfRefused(inputs, error);
    }
    return this.completeRest(inputs, direct);
  }

  /**
   * The answers of completions after the statement that completed tasks of
   * no workflow (`direct`, its rows): what it left — workflow nodes, whose
   * release must share the completion's transaction, and stale tokens —
   * goes on in a transaction with the release. If that transaction fails,
   * only its own callers see the failure: the others' completions are
   * already committed.
   */
  private async completeRest(
    inputs: CompleteInput[],
    direct: Map<string, Row>,
  ): Promise<Array<Settled<DueEntry[] | null>>> {
    const answers = new Array<Settled<DueEntry[] | null>>(inputs.length);
    const rest: CompleteInput[] = [];
    inputs.forEach((input, i) => {
      if (take(direct, input.ref)) answers[i] = { ok: true, value: [] };
      else rest.push(input);
    });
    if (rest.length > 0) {
      const restAnswers = await this.completeReleasing(rest).catch((error: unknown) =>
        this.oneByOneIfRefused(rest, error),
      );
      let next = 0;
      for (let i = 0; i < inputs.length; i++) answers[i] ??= restAnswers[next++]!;
    }
    return answers;
  }

  /** COMPLETE_MANY and the workflow release, in one transaction. */
  private completeReleasing(inputs: CompleteInput[]): Promise<Array<Settled<DueEntry[] | null>>> {
    return this.calls.inTransactionWithRetries(async (db) => {
      // On `tasks`: an error in a transaction leaves nothing to fall back in.
      const rows = byIdAndToken((await db.query(COMPLETE_MANY, completeValues(inputs))).rows);
      // One release per completed workflow node, in this transaction, for all
      // the workflows of the batch (locked in id order).
      const releases = await releaseTerminal(db, [...rows.values()], inputs[0]!.nowMs);
      return inputs.map((input): Settled<DueEntry[] | null> => {
        const row = take(rows, input.ref);
        return { ok: true, value: row ? (releases.get(row.id) ?? []) : null };
      });
    });
  }

  /** After a statement over several inputs failed: a data exception is retried per input; anything else fails them all. */
  private async oneByOneIfRefused(
    inputs: CompleteInput[],
    error: unknown,
  ): Promise<Array<Settled<DueEntry[] | null>>> {
    if (!isDataException(error) || inputs.length === 1)
      return inputs.map(() => ({ ok: false, error }));
    return Promise.all(
      inputs.map((input) =>
        this.completeMany([input]).then(
          (answers) => answers[0]!,
          (e: unknown): Settled<DueEntry[] | null> => ({ ok: false, error: e }),
        ),
      ),
    );
  }
}

/** START_MANY's parameters for inputs of one (worker, lease). */
function startValues(inputs: readonly StartInput[]): unknown[] {
  const { workerId, leaseMs } = inputs[0]!;
  const refs = refsOf(inputs);
  return [
    plainArray(refs.map((r) => r.tenantId)),
    plainArray(refs.map((r) => r.taskId)),
    plainArray(refs.map((r) => r.fencingToken)),
    plainArray(refs.map((r) => r.runAtMs)),
    workerId,
    plainArray(inputs.map((i) => i.nowMs)),
    leaseMs,
    ...runAtBounds(refs),
    plainArray(refs.map((r) => r.dispatchedAtMs)),
  ];
}

/** COMPLETE_MANY's parameters for the inputs. */
function completeValues(inputs: readonly CompleteInput[]): unknown[] {
  const refs = refsOf(inputs);
  return [
    plainArray(refs.map((r) => r.tenantId)),
    plainArray(refs.map((r) => r.taskId)),
    plainArray(refs.map((r) => r.fencingToken)),
    plainArray(refs.map((r) => r.runAtMs)),
    textArray(inputs.map((i) => i.resultJson)),
    plainArray(inputs.map((i) => i.nowMs)),
    ...runAtBounds(refs),
  ];
}

const refsOf = (inputs: ReadonlyArray<{ ref: RefWithRunAt }>) => inputs.map((i) => i.ref);

const START: DayPartitionStatement = { onTasks: START_MANY, on: startMany, name: "cf_start_many" };
const STEP: DayPartitionStatement = { onTasks: STEP_MANY, on: stepMany, name: "cf_step_many" };
const COMPLETE_OUTSIDE_WORKFLOWS: DayPartitionStatement = {
  onTasks: COMPLETE_MANY_OUTSIDE_WORKFLOWS,
  on: (partition) => completeMany(partition, true),
  name: "cf_complete_many",
};

/**
 * Bounds on run_at as plain parameters, so the planner prunes the partitions
 * of a coalesced statement: the whole UTC days of the batch's run_at (a
 * partition each). Whole days, not the batch's own range: a filling
 * partition's histogram ends before "now", so a range of a few recent
 * milliseconds looked empty to the planner, which then scanned the partition
 * for it and joined each row it found with the whole batch, at three to four
 * times the cost per row of one primary-key probe per row. A partition with
 * no statistics at all still gets that plan, until the API analyzes it
 * (migrations/000021).
 */
function runAtBounds(refs: ReadonlyArray<{ runAtMs: number }>): [string, string] {
  const { firstMs, lastMs } = runAtDays(refs);
  return [isoOfMs(firstMs), isoOfMs(lastMs + DAY_MS)];
}

function groupBy<T>(items: readonly T[], key: (item: T) => string): T[][] {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    const group = groups.get(k);
    if (group) group.push(item);
    else groups.set(k, [item]);
  }
  return [...groups.values()];
}

const byIdAndToken = (rows: Row[]): Map<string, Row> =>
  new Map(rows.map((row) => [`${row.id}:${row.token}`, row]));

/** A row answers one caller only: the same task twice in a batch starts once, the other is stale. */
function take(rows: Map<string, Row>, ref: ExecutionRef): Row | null {
  const key = `${ref.taskId.toLowerCase()}:${ref.fencingToken}`;
  const row = rows.get(key) ?? null;
  rows.delete(key);
  return row;
}
