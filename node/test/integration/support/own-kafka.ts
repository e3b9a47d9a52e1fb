/**
 * A test-owned Kafka broker (scripts/kafka.sh with its own ports and run
 * directory), for tests that must stop and restart Kafka: the shared broker on
 * 9092 is never touched. Data is kept across a restart (KAFKA_KEEP_DATA=1), as
 * a real broker restart keeps its log.
 */
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { rm } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { freePort } from "../../../../bench/free-port.js";

const run = promisify(execFile);
const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../..");
const SCRIPT = path.join(repoRoot, "scripts", "kafka.sh");

export interface OwnKafka {
  brokers: string;
  /** The broker's own client port (what `brokers` names unless a proxy is advertised). */
  port: number;
  /** `extraProps`: broker property lines for this start only (KAFKA_EXTRA_PROPS). */
  start(extraProps?: string): Promise<void>;
  stop(): Promise<void>;
  /** Stops it and deletes its run directory. */
  destroy(): Promise<void>;
}

/** `advertisedPort`: clients are told to connect there (a proxy, listening before start()). */
export async function ownKafka(options: { advertisedPort?: number } = {}): Promise<OwnKafka> {
  const port = await freePort();
  const controllerPort = await freePort();
  const runDir = path.join(
    repoRoot,
    ".cache",
    "kafka",
    `run-test-${randomBytes(4).toString("hex")}`,
  );
  const env = {
    ...process.env,
    KAFKA_PORT: String(port),
    KAFKA_ADVERTISED_PORT: String(options.advertisedPort ?? port),
    KAFKA_CONTROLLER_PORT: String(controllerPort),
    KAFKA_RUN_DIR: runDir,
    KAFKA_KEEP_DATA: "1",
    KAFKA_HEAP: "256m",
    KAFKA_START_TIMEOUT: "150",
  };
  const script = async (command: "start" | "stop", extraProps = "") => {
    try {
      await run(SCRIPT, [command], {
        env: { ...env, KAFKA_EXTRA_PROPS: extraProps },
        timeout: 200_000,
      });
    } catch (error) {
      const { stderr, stdout } = error as { stderr?: string; stdout?: string };
      throw new Error(
        `scripts/kafka.sh ${command} (port ${port}) failed: ${stderr || stdout || error}`,
      );
    }
  };
  return {
    brokers: `127.0.0.1:${options.advertisedPort ?? port}`,
    port,
    start: (extraProps) => script("start", extraProps),
    stop: () => script("stop"),
    async destroy() {
      await script("stop").catch(() => undefined);
      await rm(runDir, { recursive: true, force: true });
    },
  };
}
