/** Polls `probe` until `done` holds (for hooks, where expect.poll is not available). */
export async function waitUntil<T>(
  what: string,
  probe: () => Promise<T> | T,
  done: (value: T) => boolean,
  timeoutMs = 10_000,
  intervalMs = 25,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (done(value)) return value;
    if (Date.now() > deadline)
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what} (last: ${JSON.stringify(value)})`,
      );
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
