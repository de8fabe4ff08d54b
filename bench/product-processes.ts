import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createWriteStream, readdirSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { buildBundles } from "../scripts/build.ts";
import { stopChild } from "./rpc.ts";

const REPO = fileURLToPath(new URL("..", import.meta.url));
// Production serves metrics to this token's holder only (and refuses to start without one); nothing here scrapes them.
const METRICS_TOKEN = randomBytes(24).toString("base64url");

// Product processes are not tied to the benchmark's IPC; if the benchmark
// dies or is interrupted they are killed with it rather than left running.
const live = new Set<ChildProcess>();
process.on("exit", () => {
  for (const child of live) child.kill("SIGKILL");
});

/** What every product process of one run shares. */
export interface ProductSettings {
  databaseUrl: string;
  secretKey: string;
  jwtSecret: string;
  /** POSTs in flight per lane worker, and keep-alive sockets per subscriber origin. */
  concurrency: number;
  connections: number;
  logDir: string;
  /** Runs every product process under `--cpu-prof`, writing `<name>.cpuprofile` beside its log. */
  cpuProfile: boolean;
  /** More environment for every process (a compressed retry schedule, a log level). */
  env?: Record<string, string>;
  /** How long a process may take to be ready before it is killed and the start fails (default 30 s). */
  startTimeoutMs?: number;
}

export interface ProductProcess {
  readonly name: string;
  readonly pid: number;
  /** Where its stdout and stderr go. */
  readonly logFile: string;
  /** Resolves with the exit code (null when a signal ended it). */
  readonly exited: Promise<number | null>;
  /** From its spawn to its ready line, in milliseconds (for a lane worker: its lane claims and its sweeper runs). */
  readonly startMs: number;
  /** Lines it wrote to stderr so far. */
  stderrLines(): number;
  /** False once it exited. */
  alive(): boolean;
  /** Resident and peak resident memory from /proc, in bytes; undefined once it exited. */
  memory(): { rss: number; peak: number } | undefined;
  /** CPU time (user + system) used so far, in milliseconds, at the kernel's 10 ms resolution. */
  cpuMs(): number;
  /** SIGTERM (the product drains), SIGKILL after 15 s. */
  stop(): Promise<void>;
  /** SIGKILL, as a crash would; resolves once it is gone. */
  kill(): Promise<void>;
}

/**
 * The API as `npm run api` runs it (`node app/server.ts` with HOOKLANE_LANE=off),
 * in production mode, publishing when `publish` is set, on `port` (a free one
 * when absent). Resolves once it listens.
 */
export async function startApi(
  settings: ProductSettings,
  options: { publish: boolean; name: string; port?: number },
): Promise<ProductProcess & { url: string }> {
  const port = options.port ?? (await freePort());
  const started = await startProduct(settings, {
    args: ["app/server.ts"],
    name: options.name,
    // The load comes from one token far above any request rate limit: the bench measures the API, not the limiter.
    env: {
      PORT: String(port),
      HOOKLANE_LANE: "off",
      ENABLE_API_EVENT_QUEUE: String(options.publish),
      API_RATE_LIMIT: "false",
    },
    ready: /hooklane API on /,
  });
  return { ...started, url: `http://127.0.0.1:${port}` };
}

/**
 * The hand-written API peer (`bench/peers/api-peer.ts`): the same endpoint
 * on Hono + jose + zod + pg, with the run's database and token secret.
 */
export async function startApiPeer(
  settings: ProductSettings,
  options: { name: string },
): Promise<ProductProcess & { url: string }> {
  const port = await freePort();
  const started = await startProduct(settings, {
    args: ["bench/peers/api-peer.ts"],
    name: options.name,
    env: { PORT: String(port) },
    ready: /api peer on /,
  });
  return { ...started, url: `http://127.0.0.1:${port}` };
}

let bundles: Promise<unknown> | undefined;

/** `npm run worker`'s command line after `node` (its V8 flags, the bundle), read from package.json. */
const WORKER_ARGS = npmScriptNodeArgs("worker");

/**
 * One lane worker as `npm run worker` runs it (`node <flags> dist/worker.mjs`, the bundle built first — once
 * per run here), `env` added; with `fromSource`, with the same flags from source (`app/worker.ts`), for
 * comparison. Resolves once its lane started: its lane loop has sent its first step and its sweeper runs.
 */
export async function startWorker(
  settings: ProductSettings,
  options: { name: string; env?: Record<string, string>; fromSource?: boolean },
): Promise<ProductProcess> {
  if (!options.fromSource) await (bundles ??= buildBundles());
  return startProduct(settings, {
    args: options.fromSource ? [...WORKER_ARGS.slice(0, -1), "app/worker.ts"] : WORKER_ARGS,
    name: options.name,
    env: options.env ?? {},
    ready: /lane worker .* started/,
  });
}

/**
 * The API (publishing) and one lane worker, started side by side; when either
 * fails to start, the other is stopped before the error is thrown.
 */
export async function startPipeline(
  settings: ProductSettings,
  name: string,
): Promise<{ api: ProductProcess & { url: string }; worker: ProductProcess }> {
  const [api, worker] = await Promise.allSettled([
    startApi(settings, { publish: true, name: `${name}-api` }),
    startWorker(settings, { name: `${name}-worker` }),
  ]);
  if (api.status === "fulfilled" && worker.status === "fulfilled") return { api: api.value, worker: worker.value };
  await Promise.all(
    [api, worker].map((started) => (started.status === "fulfilled" ? started.value.stop() : undefined)),
  );
  throw [api, worker].find((started) => started.status === "rejected")!.reason;
}

async function startProduct(
  settings: ProductSettings,
  options: { args: string[]; name: string; env: Record<string, string>; ready: RegExp },
): Promise<ProductProcess> {
  const logFile = join(settings.logDir, `${options.name}.log`);
  const log = createWriteStream(logFile);
  const profile = settings.cpuProfile
    ? ["--cpu-prof", `--cpu-prof-dir=${settings.logDir}`, `--cpu-prof-name=${options.name}.cpuprofile`]
    : [];
  const spawnedAt = performance.now();
  const child = spawn(process.execPath, [...profile, ...options.args], {
    cwd: REPO,
    stdio: ["ignore", "pipe", "pipe"],
    // Only what the product needs, so a developer's own DATABASE_URL or retry schedule cannot leak in.
    env: {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? "",
      NODE_ENV: "production",
      DATABASE_URL: settings.databaseUrl,
      WEBHOOK_SECRET_KEY: settings.secretKey,
      AUTH_JWT_SECRET: settings.jwtSecret,
      METRICS_TOKEN,
      WEBHOOK_ALLOWED_HOSTS: "127.0.0.1",
      WEBHOOK_CONCURRENCY: String(settings.concurrency),
      WEBHOOK_CONNECTIONS_PER_ORIGIN: String(settings.connections),
      CATALOGUE_AUTO_SYNC: "false",
      ...settings.env,
      ...options.env,
    },
  });
  live.add(child);
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  void exited.then(() => live.delete(child));
  child.stdout.pipe(log, { end: false });
  child.stderr.pipe(log, { end: false });
  let stderrLines = 0;
  child.stderr.on("data", (chunk: Buffer) => {
    for (const byte of chunk) if (byte === 0x0a) stderrLines++;
  });
  void exited.then(() => log.end());

  const startMs = await new Promise<number>((resolve, reject) => {
    let seen = "";
    const limitMs = settings.startTimeoutMs ?? 30_000;
    const timer = setTimeout(() => fail(new Error(`${options.name} did not start within ${limitMs} ms`)), limitMs);
    const fail = (error: Error) => {
      clearTimeout(timer);
      child.kill("SIGKILL");
      reject(new Error(`${error.message}; see ${logFile}`));
    };
    child.stdout.on("data", function onData(chunk: Buffer) {
      seen = (seen + chunk.toString("utf8")).slice(-4_096);
      if (options.ready.test(seen)) {
        clearTimeout(timer);
        child.stdout.off("data", onData);
        resolve(performance.now() - spawnedAt);
      }
    });
    void exited.then((code) => fail(new Error(`${options.name} exited with ${code} while starting`)));
  });

  return {
    name: options.name,
    pid: child.pid!,
    logFile,
    exited,
    startMs,
    stderrLines: () => stderrLines,
    alive: () => child.exitCode === null && child.signalCode === null,
    memory: () => processMemory(child.pid!),
    cpuMs: () => processCpuMs(child.pid!),
    stop: () => stopChild(child, exited, 15_000),
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await exited;
    },
  };
}

/** The arguments after `node` of an npm script that is one `node …` command. */
function npmScriptNodeArgs(name: string): string[] {
  const packageJson = JSON.parse(readFileSync(join(REPO, "package.json"), "utf8")) as {
    scripts: Record<string, string>;
  };
  const [command, ...args] = packageJson.scripts[name]?.split(/\s+/) ?? [];
  if (command !== "node" || args.length === 0) throw new Error(`npm run ${name} is not one node command`);
  return args;
}

// USER_HZ: the unit of /proc/<pid>/stat's times on every Linux Node runs on.
const CLOCK_TICKS_PER_SECOND = 100;

/** The fields of /proc/<pid>/stat after the parenthesised command name (which may itself contain spaces). */
function statFields(pid: number): string[] | undefined {
  try {
    return readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  } catch {
    return undefined;
  }
}

/**
 * utime + stime of a live process from /proc/<pid>/stat, in milliseconds; NaN once it exited. With `reaped`, plus
 * the children it has waited for (cutime + cstime: a postmaster's exited backends and autovacuum workers).
 */
export function processCpuMs(pid: number, reaped = false): number {
  const fields = statFields(pid);
  if (!fields) return NaN;
  const ticks = Number(fields[11]) + Number(fields[12]) + (reaped ? Number(fields[13]) + Number(fields[14]) : 0);
  return (ticks * 1_000) / CLOCK_TICKS_PER_SECOND;
}

/** The parent of a live process; NaN once it exited. */
export function parentPid(pid: number): number {
  return Number(statFields(pid)?.[1] ?? NaN);
}

/**
 * CPU of every PostgreSQL process now alive on this machine, and of those its postmaster reaped, in milliseconds
 * (from /proc: only meaningful with the server on this host and nothing else using it). With `postmaster`, only
 * that server's: its postmaster and the processes it started, so another cluster on the machine does not count.
 */
export function postgresCpuMs(postmaster?: number): number {
  let ms = 0;
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    let command: string;
    try {
      command = readFileSync(`/proc/${pid}/comm`, "utf8").trim();
    } catch {
      continue; // gone meanwhile
    }
    if (command !== "postgres") continue;
    if (postmaster !== undefined && Number(pid) !== postmaster && parentPid(Number(pid)) !== postmaster) continue;
    const cpu = processCpuMs(Number(pid), true);
    if (!Number.isNaN(cpu)) ms += cpu;
  }
  return ms;
}

/** VmRSS and VmHWM of a live process, in bytes. */
export function processMemory(pid: number): { rss: number; peak: number } | undefined {
  let status: string;
  try {
    status = readFileSync(`/proc/${pid}/status`, "utf8");
  } catch {
    return undefined;
  }
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? NaN) * 1_024;
  return { rss: kb("VmRSS"), peak: kb("VmHWM") };
}

/** A TCP port nothing listens on right now, on loopback. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() =>
        typeof address === "object" && address ? resolve(address.port) : reject(new Error("no port")),
      );
    });
  });
}
