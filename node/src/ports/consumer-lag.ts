/**
 * How far the workers' consumer groups are behind, per queue: the sum over
 * the topic's partitions of (latest offset − the group's committed offset;
 * the whole partition when the group has committed nothing). Read from the
 * broker, not from the workers, so it shows a queue nobody consumes too.
 * A broker that does not answer in time rejects (the caller shows the error).
 */
import type { TopicKind } from "../domain/envelope.js";

export interface QueueLag {
  queue: TopicKind;
  topic: string;
  group: string;
  /** Messages not yet committed by the group. */
  lag: number;
  partitions: Array<{ partition: number; latest: number; committed: number | null }>;
}

export interface ConsumerLag {
  lag(): Promise<QueueLag[]>;
}
