/**
 * The dashboard's only way to the server: the public API with the tenant's
 * key (`Authorization: Bearer`), held in sessionStorage (gone when the tab
 * closes), and the operator token for the cluster page, held the same way.
 * Errors come back as ApiError with the server's stable code and message.
 */

const KEY = "chronofence.apiKey";
const ADMIN = "chronofence.adminToken";

export const session = {
  key: (): string | null => sessionStorage.getItem(KEY),
  setKey: (key: string) => sessionStorage.setItem(KEY, key),
  adminToken: (): string | null => sessionStorage.getItem(ADMIN),
  setAdminToken: (token: string | null) =>
    token === null ? sessionStorage.removeItem(ADMIN) : sessionStorage.setItem(ADMIN, token),
  signOut: () => {
    sessionStorage.removeItem(KEY);
    sessionStorage.removeItem(ADMIN);
  },
};

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** Listeners told when the key is refused (401): the app goes back to sign-in. */
const refusedListeners = new Set<() => void>();
export const onKeyRefused = (listener: () => void) => {
  refusedListeners.add(listener);
  return () => refusedListeners.delete(listener);
};

export async function request<T>(
  method: string,
  path: string,
  options: { body?: unknown; token?: string | null } = {},
): Promise<T> {
  const token = options.token === undefined ? session.key() : options.token;
  const headers: Record<string, string> = {};
  if (token) headers.authorization = `Bearer ${token}`;
  if (options.body !== undefined) headers["content-type"] = "application/json";
  let response: Response;
  try {
    response = await fetch(path, {
      method,
      headers,
      ...(options.body !== undefined && { body: JSON.stringify(options.body) }),
    });
  } catch (error) {
    throw new ApiError(0, "unreachable", `the API did not answer: ${(error as Error).message}`);
  }
  const text = await response.text();
  const parsed = text === "" ? null : safeJson(text);
  if (response.ok) return parsed as T;
  const error = (parsed as { error?: { code?: string; message?: string } } | null)?.error;
  if (response.status === 401 && options.token === undefined) {
    for (const listener of refusedListeners) listener();
  }
  throw new ApiError(response.status, error?.code ?? "error", error?.message ?? text.slice(0, 200));
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

export const get = <T>(path: string) => request<T>("GET", path);

export const query = (params: Record<string, string | number | undefined | null>): string => {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== "") search.set(name, String(value));
  }
  const text = search.toString();
  return text === "" ? "" : `?${text}`;
};

// The shapes the pages read (docs/api.md and docs/dashboard.md have them all).

export type TaskStatus =
  | "WAITING"
  | "SCHEDULED"
  | "ARMED"
  | "RUNNING"
  | "COMPLETED"
  | "FAILED"
  | "DEAD"
  | "CANCELLED"
  | "SKIPPED";
export const TASK_STATUSES: TaskStatus[] = [
  "WAITING",
  "SCHEDULED",
  "ARMED",
  "RUNNING",
  "COMPLETED",
  "DEAD",
  "CANCELLED",
  "SKIPPED",
];
export const PRIORITIES = ["critical", "standard", "bulk"] as const;

export interface Task {
  id: string;
  type: string;
  status: TaskStatus;
  priority: string;
  run_at: string;
  payload: unknown;
  attempt: number;
  max_attempts: number;
  timeout_ms: number;
  idempotency_key: string | null;
  result: unknown;
  last_error: { message?: string; code?: string | null } | null;
  workflow_id: string | null;
  schedule_id: string | null;
  created_at: string;
  updated_at: string;
  finished_at: string | null;
}

export interface Lateness {
  p50_ms: number | null;
  p99_ms: number | null;
  count: number;
}

export interface Alert {
  tenant_id: string;
  key: string;
  kind: string;
  state: "firing" | "resolved";
  message: string;
  details: unknown;
  fired_at: string;
  updated_at: string;
}

export interface Stats {
  now: string;
  window_ms: number;
  counts: {
    by_state: Array<{ status: TaskStatus; priority: string; count: number }>;
    counted_rows: number;
    capped: boolean;
    counted_since: string | null;
  };
  overdue: number;
  open_dead_letters: number;
  completed_per_s: number;
  failed_per_s: number;
  window: { completed: number; failed: number; dead: number };
  publish_lateness: Lateness;
  start_lateness: Lateness;
  series: Array<{
    at: string;
    completed_per_s: number;
    failed_per_s: number;
    publish_p99_ms: number | null;
    start_p50_ms: number | null;
    start_p99_ms: number | null;
  }>;
  alerts: Alert[];
}

export interface Stage {
  stage: "created" | "armed" | "published" | "started" | "finished";
  at: string | null;
  lateness_ms: number | null;
  outcome?: string;
}

export interface Attempt {
  attempt: number;
  outcome: string;
  fencing_token: string | null;
  worker_id: string | null;
  dispatched_at: string | null;
  started_at: string | null;
  ended_at: string | null;
  duration_ms: number | null;
  error: { message?: string; code?: string | null; retryable?: boolean } | null;
  result?: unknown;
}

export interface TaskHistory {
  task: Task;
  fencing_token: string | null;
  lease_owner: string | null;
  lease_expires_at: string | null;
  dispatch_shard: number | null;
  dispatch_epoch: number | null;
  timeline: Stage[];
  attempts: Attempt[];
}

export interface DeadLetter {
  id: string;
  task_id: string;
  type: string;
  payload: unknown;
  attempt: number;
  max_attempts: number;
  fencing_token: string;
  error: { message?: string; code?: string | null } | null;
  reason: string;
  worker_id: string | null;
  run_at: string;
  dead_at: string;
  replayed_at: string | null;
}

export interface Schedule {
  id: string;
  name: string;
  expression: string;
  time_zone: string;
  type: string;
  priority: string;
  paused: boolean;
  expect_within_ms: number | null;
  misfire_policy: string;
  overlap_policy: string;
  jitter_ms: number;
  next_occurrence_at: string | null;
  created_at: string;
  updated_at: string;
  history?: Array<{
    scheduled_for: string;
    outcome: string;
    catch_up: boolean;
    task_id: string | null;
    run_at: string | null;
    status: TaskStatus | null;
    attempt: number | null;
  }>;
}

export interface Upcoming {
  id: string;
  time_zone: string;
  paused: boolean;
  next: Array<{ at: string; local: string }>;
  dead_mans_switch: {
    state: "off" | "paused" | "ok" | "tripped";
    expect_within_ms?: number;
    scheduled_for?: string;
    status?: string | null;
  };
}

export interface WorkflowSummary {
  id: string;
  status: string;
  fail_fast: boolean;
  node_count: number;
  pending_nodes: number;
  dead_nodes: number;
  created_at: string;
  finished_at: string | null;
}

export interface WorkflowNode {
  key: string;
  task_id: string;
  status: TaskStatus;
  trigger_rule: string;
  depends_on: string[];
  attempt: number;
  run_at: string;
  finished_at: string | null;
}

export interface Workflow extends WorkflowSummary {
  nodes: WorkflowNode[];
}

export interface Cluster {
  now: string;
  nodes: Array<{
    node_id: string;
    roles: string[];
    host: string;
    pid: number;
    started_at: string;
    seen_at: string;
    live: boolean;
    report: Record<string, unknown>;
  }>;
  shards: Array<{
    shard: number;
    owner: string | null;
    epoch: number | null;
    expires_at: string | null;
    live: boolean;
    timers: number | null;
  }>;
  leases: Array<{ name: string; owner: string; epoch: number; expires_at: string; live: boolean }>;
  kafka_lag:
    | { queues: Array<{ queue: string; topic: string; group: string; lag: number }> }
    | { error: string };
  reconciler: { node_id: string; activity: Record<string, unknown> | null } | null;
  alerts: Alert[];
}
