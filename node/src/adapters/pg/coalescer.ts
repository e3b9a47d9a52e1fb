/**
 * Coalesces calls made in the same turn of the event loop into one
 * statement: a worker running many short tasks starts (and completes) them
 * with one round trip and one plan per batch instead of one per task. Each
 * caller gets its own answer or its own error; a batch that fails as a whole
 * fails each of its callers, who retry as they would a statement of their own.
 */
export type Settled<T> = { ok: true; value: T } | { ok: false; error: unknown };

export class Coalescer<In, Out> {
  private pending: Array<{ input: In; resolve: (out: Out) => void; reject: (e: unknown) => void }> =
    [];
  private scheduled = false;

  constructor(
    private readonly flush: (inputs: In[]) => Promise<Array<Settled<Out>>>,
    private readonly maxBatch: number,
  ) {}

  submit(input: In): Promise<Out> {
    return new Promise<Out>((resolve, reject) => {
      this.pending.push({ input, resolve, reject });
      if (this.pending.length >= this.maxBatch) this.run();
      else if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.run());
      }
    });
  }

  private run(): void {
    this.scheduled = false;
    const batch = this.pending;
    if (batch.length === 0) return;
    this.pending = [];
    this.flush(batch.map((b) => b.input)).then(
      (answers) => {
        for (let i = 0; i < batch.length; i++) {
          const answer = answers[i]!;
          if (answer.ok) batch[i]!.resolve(answer.value);
          else batch[i]!.reject(answer.error);
        }
      },
      (error: unknown) => {
        for (const b of batch) b.reject(error);
      },
    );
  }
}
