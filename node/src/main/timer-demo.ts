import { Timers } from "../timing/timers.js";
import { preciseNowMs } from "../timing/wake-driver.js";

/** `chronofence demo`: schedules a few timers on the Wasm wheel and prints how late each fired. */
export async function runTimerDemo(count: number): Promise<void> {
  const timers = new Timers();
  const done: Promise<void>[] = [];
  for (let i = 1; i <= count; i++) {
    const delayMs = i * 200 + i * 0.25;
    const dueMs = preciseNowMs() + delayMs;
    done.push(
      new Promise((resolve) =>
        timers.setTimeout(() => {
          const latenessMs = preciseNowMs() - dueMs;
          console.log(
            `timer ${i}: asked for ${delayMs.toFixed(2)} ms, fired ${latenessMs.toFixed(3)} ms after its due instant`,
          );
          resolve();
        }, delayMs),
      ),
    );
  }
  await Promise.all(done);
  timers.close();
}
