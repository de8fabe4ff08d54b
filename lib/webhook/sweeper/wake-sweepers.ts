import { sql } from "drizzle-orm";
import type { Database } from "../../db/client.ts";

export const SWEEP_WAKE_CHANNEL = "hooklane_sweep";

/** Asks every sweeper on this database (any process) to run now, e.g. for a new recovery job. */
export async function wakeSweepers(database: Database): Promise<void> {
  await database.rows(sql`select pg_notify(${SWEEP_WAKE_CHANNEL}, '')`);
}
