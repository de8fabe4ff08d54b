import { execFile, execFileSync } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import pg from "pg";
import { freePort } from "../bench/product-processes.ts";

const run = promisify(execFile);

/** A PostgreSQL server of its own, in a temporary folder, that a drill may restart and stop at will. */
export interface PostgresCluster {
  /** Superuser URL of its `postgres` database (trust authentication, loopback only). */
  readonly url: string;
  readonly port: number;
  /** Its data folder, and the folder of the binaries it runs (initdb, pg_ctl, pg_waldump…). */
  readonly dataDir: string;
  readonly binDir: string;
  /** The server's own log. */
  readonly logFile: string;
  /** `pg_ctl restart -m fast`: every session is cut, the server is back when this resolves. */
  restart(): Promise<void>;
  /** `pg_ctl stop`: `fast` closes sessions cleanly, `immediate` is a crash (recovery from the WAL at the next start). */
  stop(mode: "fast" | "immediate"): Promise<void>;
  start(): Promise<void>;
  /** Runs one statement on a connection of its own and closes it. */
  query<T extends pg.QueryResultRow>(text: string, values?: unknown[]): Promise<T[]>;
  /** Stops the server (immediate) and removes its folder. */
  destroy(): Promise<void>;
}

const live = new Set<() => void>();
// An interrupted drill leaves no server running and no folder behind it.
process.on("exit", () => {
  for (const remove of live) remove();
});

/**
 * `initdb` a throwaway cluster under the system's temporary folder and start
 * it on a free loopback port. PostgreSQL refuses to run as root, so when this
 * process is root the binaries run as the `postgres` user (`runuser`).
 * Binaries come from `PG_BIN`, or the newest `/usr/lib/postgresql/<version>/bin`.
 */
export async function createPostgresCluster(): Promise<PostgresCluster> {
  const bin = postgresBinaries();
  const root = mkdtempSync(join(tmpdir(), "hooklane-drill-"));
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    const uid = Number(execFileSync("id", ["-u", "postgres"], { encoding: "utf8" }).trim());
    const gid = Number(execFileSync("id", ["-g", "postgres"], { encoding: "utf8" }).trim());
    chownSync(root, uid, gid);
  }
  const command = (tool: string, args: string[]): [string, string[]] =>
    asRoot ? ["runuser", ["-u", "postgres", "--", join(bin, tool), ...args]] : [join(bin, tool), args];
  const pgCtl = async (...args: string[]) => {
    const [file, argv] = command("pg_ctl", ["-D", dataDir, "-w", "-t", "60", ...args]);
    await run(file, argv);
  };

  const dataDir = join(root, "data");
  const logFile = join(root, "postgres.log");
  const port = await freePort();
  const [immediate, immediateArgs] = command("pg_ctl", ["-D", dataDir, "-m", "immediate", "stop"]);
  const remove = () => {
    try {
      execFileSync(immediate, immediateArgs, { stdio: "ignore" });
    } catch {
      // Not running.
    }
    rmSync(root, { recursive: true, force: true });
  };
  live.add(remove);
  const [initdb, initArgs] = command("initdb", [
    "-D",
    dataDir,
    "-U",
    "postgres",
    "--auth=trust",
    "-E",
    "UTF8",
    "--no-instructions",
  ]);
  const options = [
    `-c port=${port}`,
    "-c listen_addresses=127.0.0.1",
    `-c unix_socket_directories=${root}`,
    "-c max_connections=200",
  ].join(" ");
  const start = () => pgCtl("start", "-l", logFile, "-o", options);
  try {
    await run(initdb, initArgs);
    await start();
  } catch (error) {
    live.delete(remove);
    remove();
    throw error;
  }
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;

  return {
    url,
    port,
    dataDir,
    binDir: bin,
    logFile,
    restart: () => pgCtl("restart", "-m", "fast", "-l", logFile, "-o", options),
    stop: (mode) => pgCtl("stop", "-m", mode),
    start,
    async query<T extends pg.QueryResultRow>(text: string, values: unknown[] = []) {
      const client = new pg.Client({ connectionString: url, application_name: "hooklane-drill" });
      await client.connect();
      try {
        return (await client.query<T>(text, values)).rows;
      } finally {
        await client.end();
      }
    },
    async destroy() {
      live.delete(remove);
      remove();
    },
  };
}

function postgresBinaries(): string {
  if (process.env.PG_BIN) return process.env.PG_BIN;
  const base = "/usr/lib/postgresql";
  const versions = existsSync(base)
    ? readdirSync(base)
        .filter((v) => existsSync(join(base, v, "bin", "initdb")))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (versions.length === 0)
    throw new Error(`no PostgreSQL binaries under ${base}; set PG_BIN to the folder of initdb`);
  return join(base, versions[0]!, "bin");
}
