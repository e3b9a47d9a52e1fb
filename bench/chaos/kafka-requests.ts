/**
 * A fault at the level of Kafka requests, for a proxy in front of a broker:
 * the client's byte stream is cut into request frames (an int32 size, then
 * the header's int16 API key), and each frame is forwarded, dropped (the
 * client waits for an answer that never comes, as with a request lost on the
 * way) or answered by resetting the connection. Deterministic where a black
 * hole is not: a test can lose exactly the heartbeats, or fail exactly the
 * next JoinGroup.
 */

/** Kafka API keys (the protocol's request header). */
export const KafkaApi = { FindCoordinator: 10, JoinGroup: 11, Heartbeat: 12 } as const;

export type RequestVerdict = "forward" | "drop" | "reset";

/** Decides each client request by its API key; asked once per frame. */
export type RequestRule = (apiKey: number) => RequestVerdict;

/** One connection's client-to-broker stream, cut into whole frames. */
export class KafkaRequestFrames {
  private pending: Buffer = Buffer.alloc(0);

  constructor(private readonly rule: () => RequestRule) {}

  /** The bytes to send on now, or "reset" to end the connection. */
  accept(chunk: Buffer): Buffer | "reset" {
    this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    const out: Buffer[] = [];
    while (this.pending.length >= 6) {
      const end = 4 + this.pending.readInt32BE(0);
      if (this.pending.length < end) break;
      const frame = this.pending.subarray(0, end);
      this.pending = this.pending.subarray(end);
      const verdict = this.rule()(frame.readInt16BE(4));
      if (verdict === "reset") return "reset";
      if (verdict === "forward") out.push(frame);
    }
    return Buffer.concat(out);
  }
}
