// Vitest globalSetup: makes sure a Kafka broker answers on 127.0.0.1:9092
// before any test runs, with scripts/kafka.sh (a no-op when one already
// answers: started by .ci/run, by `npm run kafka:start`, or by docker compose).
// A broker that this setup started is stopped again after the run; one that was
// already there is left alone. Skipped when KAFKA_BROKERS names another broker.
//
// vitest.config.ts:  test: { globalSetup: ["scripts/kafka/vitest-global-setup.mjs"] }
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const script = fileURLToPath(new URL("../kafka.sh", import.meta.url));
const run = (cmd) => execFileSync(script, [cmd], { stdio: "inherit" });
const answers = () => {
  try {
    execFileSync(script, ["status"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
};

export default function setup() {
  const brokers = process.env.KAFKA_BROKERS;
  if (brokers && brokers !== "127.0.0.1:9092" && brokers !== "localhost:9092") return;
  const wasUp = answers();
  if (!wasUp) run("start");
  return () => {
    if (!wasUp && process.env.KAFKA_KEEP_RUNNING !== "1") run("stop");
  };
}
