// CPU of one database's PostgreSQL backends, from /proc. `postgresCpuMs` counts every process of the server, its
// background writers included, and so also whatever else uses the server meanwhile; this counts only the
// sessions of the bench database, the lane's own statements.
import { sql } from "drizzle-orm";
import type { Database } from "../lib/db/client.ts";
import { parentPid, processCpuMs } from "./product-processes.ts";

/** Backend pid → its CPU time so far, in milliseconds. */
export type BackendCpu = ReadonlyMap<number, number>;

/** The CPU of this database's backends now, the benchmark's own sessions (`hooklane-bench`) left out. */
export async function databaseBackendsCpu(database: Database): Promise<BackendCpu> {
  const rows = await database.rows<{ pid: number }>(sql`
    select pid from pg_stat_activity
    where datname = current_database() and application_name <> 'hooklane-bench'
  `);
  const cpu = new Map<number, number>();
  for (const { pid } of rows) {
    const ms = processCpuMs(pid);
    if (!Number.isNaN(ms)) cpu.set(pid, ms);
  }
  return cpu;
}

/**
 * Milliseconds of CPU the backends spent from `before` to `after`: a backend that started in between counts
 * from zero; one that exited in between is missed.
 */
export function backendCpuSpentMs(before: BackendCpu, after: BackendCpu): number {
  let ms = 0;
  for (const [pid, now] of after) ms += now - (before.get(pid) ?? 0);
  return ms;
}

/** The postmaster of the server `database` is on (its backend's parent), or undefined when that is not this machine. */
export async function serverPostmaster(database: Database): Promise<number | undefined> {
  const [row] = await database.rows<{ pid: number }>(sql`select pg_backend_pid() as pid`);
  const postmaster = parentPid(row!.pid);
  return Number.isNaN(postmaster) ? undefined : postmaster;
}
