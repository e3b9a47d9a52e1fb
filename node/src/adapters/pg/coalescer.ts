/**
 * Coalesces calls into few statements: a worker running many short tasks
 * starts (and completes) them with one round trip and one plan per batch
 * instead of one per task. Calls of one turn of the event loop go together;
 * while `maxInFlight` statements are out, new calls wait and go together in
 * the next, so batches grow exactly as much as Postgres' own latency makes
 * necessary, instead of queueing many small statements for the pool's few
 * connections. Each caller gets its own answer or its own error; a batch
 * that fails as a whole fails each of its callers, who retry as they would a
 * statement of their own.
 *
 * `lingerMs` > 0: a batch leaves that long after its first call instead of
 * in the next turn (or at once when full), so that at low rates more calls
 * share a statement. Each statement costs Postgres and the caller a fixed
 * share of CPU whatever its rows; for a completion, which nothing waits on
 * but the offset commit and the slot, that is worth a few milliseconds. An
 * `urgent` call (a start, which a task waits on) does not linger: it sends
 * the batch, lingering calls and all, in the next turn.
 */
export type Settled<T> = { ok: true; value: T } | { ok: false; error: unknown };

interface Call<In, Out> {
  input: In;
  resolve: (out: Out) => void;
  reject: (e: unknown) => void;
}

export class Coalescer<In, Out> {
  private pending: Array<Call<In, Out>> = [];
  /** A flush is set for the next turn (setImmediate) or, lingering, for later (a timer). */
  private scheduled: "turn" | NodeJS.Timeout | null = null;
  private inFlight = 0;

  constructor(
    private readonly flush: (inputs: In[]) => Promise<Array<Settled<Out>>>,
    private readonly maxBatch: number,
    private readonly maxInFlight = Number.POSITIVE_INFINITY,
    private readonly lingerMs = 0,
    private readonly urgent: (input: In) => boolean = () => false,
  ) {}

  submit(input: In): Promise<Out> {
    return new Promise<Out>((resolve, reject) => {
      this.pending.push({ input, resolve, reject });
      if (this.pending.length >= this.maxBatch) this.run();
      else this.schedule(this.urgent(input));
    });
  }

  private schedule(urgent: boolean): void {
    if (this.pending.length === 0 || this.inFlight >= this.maxInFlight) return;
    const lingers = this.lingerMs > 0 && !urgent;
    if (this.scheduled !== null) {
      if (lingers || this.scheduled === "turn") return;
      clearTimeout(this.scheduled); // an urgent call: the lingering batch leaves with it
    }
    const go = () => {
      this.scheduled = null;
      this.run();
    };
    if (lingers) this.scheduled = setTimeout(go, this.lingerMs);
    else {
      this.scheduled = "turn";
      setImmediate(go);
    }
  }

  /** Only a linger asks: without one, every batch leaves in the next turn. */
  private urgentPending(): boolean {
    return this.lingerMs > 0 && this.pending.some((call) => this.urgent(call.input));
  }

  private run(): void {
    if (this.pending.length === 0 || this.inFlight >= this.maxInFlight) return; // a completion runs it
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
