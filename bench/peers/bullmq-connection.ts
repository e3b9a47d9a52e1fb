import type { ConnectionOptions } from "bullmq";

/** BullMQ's connection options for a redis:// URL (BullMQ takes ioredis options, not a URL). */
export function bullmqConnection(redisUrl: string): ConnectionOptions {
  const url = new URL(redisUrl);
  const db = url.pathname.length > 1 ? Number(url.pathname.slice(1)) : 0;
  return {
    host: url.hostname,
    port: Number(url.port || 6379),
    db,
    ...(url.password !== "" && { password: decodeURIComponent(url.password) }),
    // Workers block on Redis; BullMQ requires unlimited retries per request for them.
    maxRetriesPerRequest: null,
  };
}
