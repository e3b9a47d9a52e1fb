/**
 * Coalesces calls into few statements: a worker running many short tasks
 * starts (and completes) them with one round trip and one plan per batch
 * instead of one per task. Calls of one turn of the event loop go together;
 * while a statement is out, new calls wait and go together in the next, so
 * batches grow exactly as much as Postgres' own latency makes necessary,
 * instead of queueing many small statements for the pool's few connections.
 * Each caller gets its own answer or its own error; a batch that fails as a
 * whole fails each of its callers, who retry as they would a statement of
 * their own.
 *
 * `partialInFlight`, `maxInFlight`: a batch leaves while fewer than
 * `partialInFlight` statements are out, or, once it is full (`maxBatch`),
 * fewer than `maxInFlight`. One statement at a time makes the largest
 * batches, and each statement costs Postgres and the caller a fixed share of
 * CPU whatever its rows; more at a time only helps once a batch is full.
 *
 * `lingerMs` > 0: a batch leaves that long after its first call instead of
 * in the next turn (or at once when full), so that at low rates more calls
 * share a statement. Each statement costs Postgres and the caller a fixed
 * share of CPU whatever its rows; for a completion, which nothing waits on
 * but the offset commit and the slot, that is worth a few milliseconds. An
 * `urgent` call (a start, which a task waits on) does not linger: it sends
 * the batch, lingering calls and all, in the next turn.
 *
 * `busyLingerMs` > 0: while the load is high (at least `busyCallsPerS`
 * calls a second over the last LOAD_WINDOW_MS or more, by `nowMs`) every
 * batch, urgent calls and all, leaves that long after its first call. Under
 * load the statements' rate is otherwise set by their round trip alone (each
 * a synchronous commit), and each costs its fixed share; a few ms more per
 * call make them fewer and fuller. A rate, not the last batch's size: the
 * batches of a light load come in bursts (a fetch's worth, a pause's
 * backlog), and a burst alone must not make its next tasks wait.
 */
export type Settled<T> = { ok: true; value: T } | { ok: false; error: unknown };

interface Call<In, Out> {
  input: In;
  resolve: (out: Out) => void;
  reject: (e: unknown) => void;
}

export interface CoalescerOptions<In> {
  maxBatch: number;
  /** Statements out at once, full batches (default: no limit). */
  maxInFlight?: number;
  /** Statements out at once while the batch waiting is not full (default: maxInFlight). */
  partialInFlight?: number;
  lingerMs?: number;
  /** A call that does not linger (default: none). */
  urgent?: (input: In) => boolean;
  /** The wait for every call while the load is high (0: none). */
  busyLingerMs?: number;
  /** Calls a second from which the load is high. */
  busyCallsPerS?: number;
  /** The clock that measures the load (ms; default performance.now, which never steps back). */
  nowMs?: () => number;
}

/** The load is measured over windows of at least this long. */
const LOAD_WINDOW_MS = 100;

export class Coalescer<In, Out> {
  private pending: Array<Call<In, Out>> = [];
  /** A flush is set for the next turn (setImmediate) or, lingering, for later (a timer). */
  private scheduled: "turn" | NodeJS.Timeout | null = null;
  private inFlight = 0;
  private readonly maxBatch: number;
  private readonly maxInFlight: number;
  private readonly partialInFlight: number;
  private readonly lingerMs: number;
  private readonly urgent: (input: In) => boolean;
  private readonly busyLingerMs: number;
  private readonly busyCallsPerS: number;
  private readonly nowMs: () => number;
  private windowStartMs: number;
  private windowCalls = 0;
  private busy = false;

  constructor(
    private readonly flush: (inputs: In[]) => Promise<Array<Settled<Out>>>,
    options: CoalescerOptions<In>,
  ) {
    this.maxBatch = options.maxBatch;
    this.maxInFlight = options.maxInFlight ?? Number.POSITIVE_INFINITY;
    this.partialInFlight = Math.min(options.partialInFlight ?? this.maxInFlight, this.maxInFlight);
    this.lingerMs = options.lingerMs ?? 0;
    this.urgent = options.urgent ?? (() => false);
    this.busyLingerMs = options.busyLingerMs ?? 0;
    this.busyCallsPerS = options.busyCallsPerS ?? Number.POSITIVE_INFINITY;
    this.nowMs = options.nowMs ?? (() => performance.now());
    this.windowStartMs = this.nowMs();
  }

  submit(input: In): Promise<Out> {
    return new Promise<Out>((resolve, reject) => {
      this.pending.push({ input, resolve, reject });
      this.windowCalls++;
      if (this.pending.length >= this.maxBatch) this.run();
      else this.schedule(this.urgent(input));
    });
  }

  /** May the batch waiting leave now (with as many statements out as there are)? */
  private mayLeave(): boolean {
    if (this.pending.length === 0) return false;
    const full = this.pending.length >= this.maxBatch;
    return this.inFlight < (full ? this.maxInFlight : this.partialInFlight);
  }

  private schedule(urgent: boolean): void {
    if (!this.mayLeave()) return;
    const busy = this.busyLingerMs > 0 && this.measureLoad();
    const lingers = busy || (this.lingerMs > 0 && !urgent);
    if (this.scheduled !== null) {
      if (lingers || this.scheduled === "turn") return;
      clearTimeout(this.scheduled); // an urgent call: the lingering batch leaves with it
    }
    const go = () => {
      this.scheduled = null;
      this.run();
    };
    if (lingers) this.scheduled = setTimeout(go, busy ? this.busyLingerMs : this.lingerMs);
    else {
      this.scheduled = "turn";
      setImmediate(go);
    }
  }

  /** Is the load high? Decided anew once a window has passed, from that window's calls. */
  private measureLoad(): boolean {
    const nowMs = this.nowMs();
    const elapsedMs = nowMs - this.windowStartMs;
    if (elapsedMs >= LOAD_WINDOW_MS) {
      this.busy = (this.windowCalls * 1000) / elapsedMs >= this.busyCallsPerS;
      this.windowStartMs = nowMs;
      this.windowCalls = 0;
    }
    return this.busy;
  }

  /** Only a linger asks: without one, every batch leaves in the next turn. */
  private urgentPending(): boolean {
    return this.lingerMs > 0 && this.pending.some((call) => this.urgent(call.input));
  }

  private run(): void {
    if (!this.mayLeave()) return; // a completion runs it
    const batch = this.pending.splice(0, this.maxBatch);
    this.inFlight++;
    // The next batch is scheduled before this one's callers run: they may submit again.
    const done = () => {
      this.inFlight--;
      this.schedule(this.urgentPending());
    };
    this.flush(batch.map((b) => b.input)).then(
      (answers) => {
        done();
        for (let i = 0; i < batch.length; i++) {
          const answer = answers[i]!;
          if (answer.ok) batch[i]!.resolve(answer.value);
          else batch[i]!.reject(answer.error);
        }
      },
      (error: unknown) => {
        done();
        for (const b of batch) b.reject(error);
      },
    );
    this.schedule(this.urgentPending());
  }
}
