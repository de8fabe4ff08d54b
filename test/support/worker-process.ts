import { spawn, type ChildProcess } from "node:child_process";

export interface WorkerProcess {
  readonly child: ChildProcess;
  /** Everything it wrote to stdout so far. */
  readonly stdout: () => string;
  /** Resolves once its lane started (its start-up line); rejects if it exits first. */
  readonly ready: Promise<void>;
  /** SIGTERM to its process group (npm and node): it drains; resolves once it exited. */
  stop(): Promise<void>;
  /** SIGKILL to its process group: no draining, no goodbye; resolves once it exited. */
  kill(): Promise<void>;
}

/**
 * Starts `npm run worker` as its own process group with `env` over the
 * test's environment, logging at info at least (the start-up line is waited
 * for). Its stderr goes to the test's, prefixed with `name`.
 */
export function startWorkerProcess(name: string, env: Record<string, string>): WorkerProcess {
  const child = spawn("npm", ["run", "--silent", "worker"], {
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, LOG_LEVEL: "info", ...env },
  });
  let stdout = "";
  child.stdout!.on("data", (chunk: Buffer) => (stdout += String(chunk)));
  child.stderr!.on("data", (chunk) => process.stderr.write(`[${name}] ${chunk}`));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const ready = new Promise<void>((resolve, reject) => {
    child.stdout!.on("data", () => /lane worker \S+ started/.test(stdout) && resolve());
    child.once("exit", (code) => reject(new Error(`${name} exited with ${code} before starting`)));
  });
  const signal = async (which: NodeJS.Signals) => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    process.kill(-child.pid!, which);
    await exited;
  };
  return { child, stdout: () => stdout, ready, stop: () => signal("SIGTERM"), kill: () => signal("SIGKILL") };
}
