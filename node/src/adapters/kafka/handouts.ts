/**
 * The messages a Kafka consumer has handed to its handler, for both clients'
 * adapters: how many are unfinished (`inFlight`), how many of those their
 * handler says wait (counted against `maxWaiting` instead of `maxInFlight`),
 * and their offsets (`watermarks`: a prefix whose outcome is durable may be
 * committed). `changed` is called whenever room may have opened.
 */
import { countedDelivery, type MessageHandler } from "../../ports/transport.js";
import { OffsetWatermarks } from "./offset-watermarks.js";

export interface HandoutLimits {
  maxInFlight: number;
  maxWaiting?: number;
  maxRetained: number;
}

export class Handouts {
  readonly watermarks = new OffsetWatermarks();
  private unfinished = 0;
  /** Of `unfinished`, those whose handler said they wait. */
  private waiting = 0;

  constructor(
    private readonly limits: HandoutLimits,
    private readonly changed: () => void,
  ) {}

  get inFlight(): number {
    return this.unfinished;
  }

  /**
   * Room for another message: fewer than `maxInFlight` unfinished and not
   * waiting, fewer than `maxWaiting` waiting, and fewer than `maxRetained`
   * held behind an unfinished one (a long task holds its partition's commit
   * point; what finished after it is kept until it does).
   */
  hasRoom(): boolean {
    return (
      this.unfinished - this.waiting < this.limits.maxInFlight &&
      this.waiting < (this.limits.maxWaiting ?? Number.POSITIVE_INFINITY) &&
      this.watermarks.retained < this.limits.maxRetained
    );
  }

  hand(handle: MessageHandler, partition: number, offset: string, value: string): void {
    const handout = this.watermarks.begin(partition, offset);
    this.unfinished++;
    const delivery = countedDelivery((change) => {
      this.waiting += change;
      if (change > 0) this.changed(); // its slot in maxInFlight is free for the fetch
    });
    // One `then` for both ends (a handler that throws holds its offset back, as one not
    // durable does): a message is handed out thousands of times a second.
    const settled = (durable: boolean) => {
      if (durable) this.watermarks.done(handout);
      delivery.waiting(false);
      this.unfinished--;
      this.changed();
    };
    void handle({ value }, delivery).then(settled, () => settled(false));
  }
}
