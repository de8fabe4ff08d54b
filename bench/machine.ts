import { readFileSync } from "node:fs";
import { availableParallelism, loadavg, release, totalmem } from "node:os";
import pg from "pg";

export interface Machine {
  cpus: number;
  cpuModel: string;
  memoryBytes: number;
  kernel: string;
  node: string;
  postgres: string;
  /** 1, 5 and 15 minute load averages when the run started: other work on a shared machine shows here. */
  loadAverage: number[];
}

/** The machine a run measured, for the report: results mean little without it. */
export async function describeMachine(adminUrl: string): Promise<Machine> {
  const cpuinfo = readFileSync("/proc/cpuinfo", "utf8");
  let postgres = "unknown";
  const client = new pg.Client({ connectionString: adminUrl });
  try {
    await client.connect();
    const { rows } = await client.query<{ server_version: string }>("show server_version");
    postgres = `PostgreSQL ${rows[0]?.server_version ?? "?"}`;
  } catch (error) {
    postgres = `unreachable (${(error as Error).message})`;
  } finally {
    await client.end().catch(() => {});
  }
  return {
    cpus: availableParallelism(),
    cpuModel: /^model name\s*:\s*(.+)$/m.exec(cpuinfo)?.[1]?.trim() ?? "unknown",
    memoryBytes: totalmem(),
    kernel: release(),
    node: process.version,
    postgres,
    loadAverage: loadavg(),
  };
}
