/**
 * Runs an async step again and again: after `intervalMs`, or at once when the
 * step says more work is waiting. Never overlaps itself; a failing step is
 * reported and retried after the interval. `stop()` resolves once the step
 * in progress (if any) has finished.
 */
export class Loop {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly step: () => Promise<boolean | undefined>,
    private readonly intervalMs: number,
    private readonly onError: (error: unknown) => void,
  ) {}

  start(delayMs = 0): this {
    this.schedule(delayMs);
    return this;
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
    try {
      more = (await this.step()) === true;
    } catch (error) {
      try {
        this.onError(error);
      } catch {
        // Nothing left to report it to; a loop that ended would stop its role for good, silently.
      }
    }
    this.running = undefined;
    this.schedule(more ? 0 : this.intervalMs);
  }
}
