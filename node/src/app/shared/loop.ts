/**
 * Runs an async step again and again: after `intervalMs`, or at once when the
 * step says more work is waiting. Never overlaps itself; a failing step is
 * reported and retried after the interval (or `retryAfterErrorMs`). `stop()`
 * resolves once the step in progress (if any) has finished.
 */
export class Loop {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly step: () => Promise<boolean | undefined>,
    private readonly intervalMs: number,
    private readonly onError: (error: unknown) => void,
    private readonly options: { retryAfterErrorMs?: number } = {},
  ) {}

  start(delayMs = 0): this {
    this.schedule(delayMs);
    return this;
  }

  /** Runs the first step at once and resolves when it has finished (a failure reported, not thrown). */
  async startNow(): Promise<void> {
    this.running = this.run();
    await this.running;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.run();
    }, delayMs);
  }

  private async run(): Promise<void> {
    let more = false;
    let failed = false;
    try {
      more = (await this.step()) === true;
    } catch (error) {
      failed = true;
      try {
        this.onError(error);
      } catch {
        // Nothing left to report it to; a loop that ended would stop its role for good, silently.
      }
    }
    this.running = undefined;
    const retryMs = this.options.retryAfterErrorMs ?? this.intervalMs;
    this.schedule(more ? 0 : failed ? retryMs : this.intervalMs);
  }
}
