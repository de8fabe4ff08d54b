import { execFile } from "node:child_process";
import { chmodSync, chownSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import pg from "pg";
import { freePort } from "./free-port.ts";

const BIN = "/usr/lib/postgresql/15/bin";
const run = promisify(execFile);

/** A PostgreSQL cluster of its own, for drills that stop and start the server. */
export interface ThrowawayCluster {
  readonly port: number;
  /** A URL on this cluster for `user` and `database` (trust auth). */
  url(user: string, database: string): string;
  /** Runs one statement as the superuser. */
  admin(statement: string): Promise<void>;
  /** Stops the server (fast shutdown: connections are cut); resolves once it is down. */
  stop(): Promise<void>;
  /** Starts it again; resolves once it accepts connections. */
  start(): Promise<void>;
  /** Stops it and deletes its data. */
  destroy(): Promise<void>;
}

/**
 * `initdb` in a temporary folder and a server on a free loopback port,
 * never the machine's shared cluster. Run as the `postgres` user when the
 * tests run as root (PostgreSQL refuses root).
 */
export async function startThrowawayCluster(): Promise<ThrowawayCluster> {
  const dir = mkdtempSync(join(tmpdir(), "hooklane-cluster-"));
  const data = join(dir, "data");
  const port = await freePort();
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    const { stdout } = await run("id", ["-u", "postgres"]);
    const { stdout: group } = await run("id", ["-g", "postgres"]);
    chownSync(dir, Number(stdout), Number(group));
    chmodSync(dir, 0o700);
  }
  const pgCommand = (command: string, args: string[]) =>
    asRoot ? run("runuser", ["-u", "postgres", "--", join(BIN, command), ...args]) : run(join(BIN, command), args);
  await pgCommand("initdb", ["-D", data, "-U", "postgres", "--auth=trust", "--no-sync"]);
  const start = () =>
    pgCommand("pg_ctl", [
      "-D",
      data,
      "-l",
      join(dir, "server.log"),
      "-o",
      `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`,
      "-w",
      "start",
    ]).then(() => {});
  const stop = () => pgCommand("pg_ctl", ["-D", data, "-m", "fast", "-w", "stop"]).then(() => {});
  await start();
  const url = (user: string, database: string) => `postgres://${user}@127.0.0.1:${port}/${database}`;
  let running = true;
  return {
    port,
    url,
    async admin(statement) {
      const client = new pg.Client({ connectionString: url("postgres", "postgres") });
      await client.connect();
      try {
        await client.query(statement);
      } finally {
        await client.end();
      }
    },
    async stop() {
      await stop();
      running = false;
    },
    async start() {
      await start();
      running = true;
    },
    async destroy() {
      if (running) await stop().catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
