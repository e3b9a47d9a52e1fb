/**
 * A workflow run in memory: the reference for what the SQL releaser
 * (cf_release_dependents, migrations/000007_workflows.sql) must do, used as
 * the oracle of its tests. Ground rules, the same in both:
 *  - a node that reaches a terminal state is counted once in each child's
 *    tally; each WAITING child then asks its trigger rule: release
 *    (→ SCHEDULED), skip (→ SKIPPED, which its own children count in turn)
 *    or wait;
 *  - with fail_fast, a node that dies cancels every pending node of the
 *    workflow (WAITING or SCHEDULED; a RUNNING one finishes on its own), and
 *    releases nothing;
 *  - the workflow ends when no node is pending: CANCELLED if it was
 *    cancelled, FAILED if any node died, COMPLETED otherwise.
 */
import type { GraphNode } from "./workflow-graph.js";
import {
  decideTrigger,
  type ParentOutcome,
  type ParentTally,
  type TriggerRule,
} from "./workflow-trigger.js";

export type NodeState = "WAITING" | "SCHEDULED" | "RUNNING" | ParentOutcome;
export type WorkflowStatus = "RUNNING" | "COMPLETED" | "FAILED" | "CANCELLED";

export interface RunNode extends GraphNode {
  triggerRule: TriggerRule;
}

export interface Step {
  released: string[];
  skipped: string[];
  cancelled: string[];
}

const TERMINAL: ReadonlySet<NodeState> = new Set(["COMPLETED", "DEAD", "SKIPPED", "CANCELLED"]);
export const isTerminalNode = (state: NodeState): boolean => TERMINAL.has(state);

export class WorkflowRun {
  private readonly states = new Map<string, NodeState>();
  private readonly tallies = new Map<string, ParentTally>();
  private readonly children = new Map<string, string[]>();
  private readonly rules = new Map<string, TriggerRule>();
  private cancelled = false;
  private died = false;

  constructor(
    nodes: readonly RunNode[],
    private readonly failFast: boolean,
  ) {
    for (const node of nodes) {
      this.states.set(node.key, node.dependsOn.length === 0 ? "SCHEDULED" : "WAITING");
      this.rules.set(node.key, node.triggerRule);
      const total = node.dependsOn.length;
      this.tallies.set(node.key, { total, completed: 0, dead: 0, skipped: 0, cancelled: 0 });
      for (const parent of node.dependsOn) {
        const list = this.children.get(parent) ?? [];
        if (list.length === 0) this.children.set(parent, list);
        list.push(node.key);
      }
    }
  }

  state(key: string): NodeState {
    return this.states.get(key)!;
  }

  start(key: string): void {
    if (this.states.get(key) === "SCHEDULED") this.states.set(key, "RUNNING");
  }

  /** A scheduled or running node ends; finishing a node twice changes nothing. */
  finish(key: string, outcome: "COMPLETED" | "DEAD"): Step {
    const step: Step = { released: [], skipped: [], cancelled: [] };
    const state = this.states.get(key)!;
    if (state !== "SCHEDULED" && state !== "RUNNING") return step;
    this.states.set(key, outcome);
    if (outcome === "DEAD") {
      this.died = true;
      if (this.failFast) {
        step.cancelled = this.cancelPending();
        return step;
      }
    }
    let frontier = [key];
    while (frontier.length > 0) {
      const next: string[] = [];
      for (const parent of frontier) {
        for (const child of this.children.get(parent) ?? []) {
          this.count(child, this.states.get(parent) as ParentOutcome);
          if (this.states.get(child) !== "WAITING") continue;
          const decision = decideTrigger(this.rules.get(child)!, this.tallies.get(child)!);
          if (decision === "release") {
            this.states.set(child, "SCHEDULED");
            step.released.push(child);
          } else if (decision === "skip") {
            this.states.set(child, "SKIPPED");
            step.skipped.push(child);
            next.push(child);
          }
        }
      }
      frontier = next;
    }
    return step;
  }

  /** Cancels the pending nodes (not running ones) and marks the workflow cancelled. */
  cancel(): string[] {
    this.cancelled = true;
    return this.cancelPending();
  }

  status(): WorkflowStatus {
    const pending = [...this.states.values()].some((s) => !isTerminalNode(s));
    if (this.cancelled) return "CANCELLED";
    if (pending) return "RUNNING";
    return this.died ? "FAILED" : "COMPLETED";
  }

  private count(child: string, outcome: ParentOutcome): void {
    const tally = this.tallies.get(child)!;
    if (outcome === "COMPLETED") tally.completed++;
    else if (outcome === "DEAD") tally.dead++;
    else if (outcome === "SKIPPED") tally.skipped++;
    else tally.cancelled++;
  }

  private cancelPending(): string[] {
    const cancelled: string[] = [];
    for (const [key, state] of this.states) {
      if (state === "WAITING" || state === "SCHEDULED") {
        this.states.set(key, "CANCELLED");
        cancelled.push(key);
      }
    }
    return cancelled;
  }
}
