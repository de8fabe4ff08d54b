import { sql, type SQL } from "drizzle-orm";
import type { Database } from "../client.ts";

/** How long a read for operators (a scrape, a readiness probe, the lane status) may take. */
export const OPS_READ_TIMEOUT_MS = 2_000;

export class ReadTimeoutError extends Error {
  override name = "ReadTimeoutError";
}

/**
 * Runs a read-only statement that must never hang whoever asked: the server
 * cancels it after `timeoutMs` (a transaction-local `statement_timeout`),
 * and the caller stops waiting shortly after even when no connection can be
 * had at all. Throws ReadTimeoutError then, or the database's own error.
 */
export async function boundedRead<T>(
  database: Database,
  query: SQL,
  timeoutMs: number = OPS_READ_TIMEOUT_MS,
): Promise<T[]> {
  const read = database.transaction(async (tx) => {
    await tx.rows(sql`select set_config('statement_timeout', ${String(timeoutMs)}, true)`);
    return tx.rows<T>(query);
  });
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new ReadTimeoutError(`no answer within ${timeoutMs} ms`)), timeoutMs + 500);
  });
  // Whatever the read does after the caller gave up is of no interest.
  read.catch(() => {});
  try {
    return await Promise.race([read, deadline]);
  } finally {
    clearTimeout(timer);
  }
}
