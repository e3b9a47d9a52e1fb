/**
 * One Chronofence process of the chaos topology (`chronofence run --roles
 * ...` from the built tree), under a supervisor: the nemesis kills, pauses,
 * stops and restarts it on purpose; any other exit is recorded as a crash
 * (no request may crash a process: docs/architecture.md) and the process is
 * started again, as a service manager would.
 *
 * Each start is a new incarnation with a new CF_NODE_ID (`d2.3` is the third
 * start of dispatch node 2): leases are keyed by node id, and a restarted
 * process must not pass for its dead predecessor. stderr goes to a log file
 * per process under the run directory.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { closeSync, openSync } from "node:fs";
import path from "node:path";
import { root, sleepMs } from "../support.js";
import { cleanupStarted } from "./cleanup.js";

/** The longest a SIGTERM is given before SIGKILL. */
const GRACE_MS = 60_000;

export type ProcessKind = "api" | "dispatch" | "worker" | "watchdog";

export interface Crash {
  process: string;
  nodeId: string;
  atMs: number;
  code: number | null;
  signal: string | null;
}

export interface ProcessSpec {
  name: string;
  kind: ProcessKind;
  /** The topology node (1-based) whose proxies it connects through. */
  node: number;
  /** Arguments after bin/chronofence.js. */
  args: string[];
  /** Its environment; `CF_NODE_ID` is added per incarnation. */
  env: () => Record<string, string>;
  /** The API's port, probed on /healthz; other kinds print `ready ... metrics_port=N`. */
  httpPort?: number;
  logDir: string;
  onCrash: (crash: Crash) => void;
}

export class ManagedProcess {
  private child: ChildProcess | null = null;
  private expectingExit = false;
  private incarnation = 0;
  private supervising = true;
  /** Set while a start waits for readiness: an exit then fails that start, which retries. */
  private starting = false;
  nodeId = "";
  metricsPorts: number[] = [];
  paused = false;
  /** An extra environment for the next starts (a skewed clock); cleared by `setExtraEnv({})`. */
  private extraEnv: Record<string, string> = {};

  constructor(readonly spec: ProcessSpec) {}

  get name(): string {
    return this.spec.name;
  }
  get pid(): number | undefined {
    return this.child?.pid;
  }
  get alive(): boolean {
    return this.child !== null && this.child.exitCode === null && this.child.signalCode === null;
  }
  get clockOffsetMs(): number {
    return Number(this.extraEnv.CF_CLOCK_OFFSET_MS ?? 0);
  }

  setExtraEnv(env: Record<string, string>): void {
    this.extraEnv = env;
  }

  /** Starts a new incarnation and waits until it is ready (retrying a start that fails). */
  async start(timeoutMs = 120_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      this.starting = true;
      try {
        await this.startOnce(Math.max(5000, deadline - Date.now()));
        this.starting = false;
        return;
      } catch (error) {
        if (Date.now() > deadline || cleanupStarted()) {
          this.starting = false;
          throw error;
        }
        await sleepMs(1000);
      }
    }
  }

  private async startOnce(timeoutMs: number): Promise<void> {
    if (cleanupStarted()) {
      this.supervising = false;
      throw new Error(`${this.spec.name}: not started, the run is stopping`);
    }
    this.incarnation++;
    this.nodeId = `${this.spec.name}.${this.incarnation}`;
    const log = openSync(path.join(this.spec.logDir, `${this.spec.name}.log`), "a");
    const child = spawn(
      process.execPath,
      [path.join(root, "bin/chronofence.js"), ...this.spec.args],
      {
        env: { ...process.env, ...this.spec.env(), ...this.extraEnv, CF_NODE_ID: this.nodeId },
        stdio: ["ignore", "pipe", log],
      },
    );
    closeSync(log);
    this.child = child;
    this.paused = false;
    this.expectingExit = false;
    child.on("exit", (code, signal) => {
      if (this.child !== child || this.expectingExit) return;
      this.spec.onCrash({
        process: this.spec.name,
        nodeId: this.nodeId,
        atMs: Date.now(),
        code,
        signal,
      });
      if (this.supervising && !this.starting)
        void sleepMs(1000).then(async () => {
          if (!this.alive) await this.start().catch(() => undefined);
        });
    });
    const ports: number[] = [];
    let out = "";
    const ready = new Promise<void>((resolve, reject) => {
      const expectedLines = this.spec.kind === "dispatch" ? 2 : 1;
      child.stdout!.on("data", (chunk: Buffer) => {
        out += chunk.toString();
        for (const m of out.matchAll(/metrics_port=(\d+)/g))
          if (!ports.includes(Number(m[1]))) ports.push(Number(m[1]));
        if (this.spec.kind !== "api" && ports.length >= expectedLines) resolve();
      });
      child.once("exit", (code, signal) =>
        reject(new Error(`${this.nodeId} exited (${code ?? signal}) before it was ready`)),
      );
    });
    const probe = this.spec.httpPort === undefined ? ready : this.untilHealthy(child, ready);
    const timer = sleepMs(timeoutMs).then(() => {
      throw new Error(`${this.nodeId} not ready after ${timeoutMs} ms`);
    });
    try {
      await Promise.race([probe, timer]);
    } catch (error) {
      this.expectingExit = true;
      child.kill("SIGKILL");
      throw error;
    }
    this.metricsPorts = ports;
  }

  private async untilHealthy(child: ChildProcess, exited: Promise<void>): Promise<void> {
    exited.catch(() => undefined);
    for (;;) {
      if (child.exitCode !== null || child.signalCode !== null) await exited;
      const ok = await fetch(`http://127.0.0.1:${this.spec.httpPort}/healthz`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) return;
      await sleepMs(200);
    }
  }

  /** kill -9; resolves once it is gone. */
  async kill9(): Promise<void> {
    await this.signalAndWait("SIGKILL");
  }

  /** SIGTERM (graceful: drains); resolves with how long it took to exit. */
  async terminate(): Promise<number> {
    const t0 = Date.now();
    await this.signalAndWait("SIGTERM");
    return Date.now() - t0;
  }

  pause(): void {
    if (!this.alive) return;
    this.child!.kill("SIGSTOP");
    this.paused = true;
  }

  resume(): void {
    if (this.child && this.paused) this.child.kill("SIGCONT");
    this.paused = false;
  }

  /** No more restarts after exits (the end of a run). */
  unsupervise(): void {
    this.supervising = false;
  }

  private async signalAndWait(signal: NodeJS.Signals): Promise<void> {
    const child = this.child;
    if (!child || !this.alive) return;
    this.expectingExit = true;
    const exited = new Promise((resolve) => child.once("exit", resolve));
    if (this.paused && signal !== "SIGKILL") child.kill("SIGCONT");
    child.kill(signal);
    this.paused = false;
    // A graceful stop that hangs is cut short (and shows as a drain time of GRACE_MS).
    const timer = setTimeout(() => child.kill("SIGKILL"), GRACE_MS);
    await exited;
    clearTimeout(timer);
  }
}
