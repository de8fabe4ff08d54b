import { sql } from "drizzle-orm";
import type { Database } from "../../lib/db/client.ts";

/**
 * Moves every time the ledger schedules by (due times, leases, message
 * marks, breakers, outbox rows) `ms` into the past, so that — together with
 * the queue emulator's clock moving `ms` forward — a test can let hours pass
 * in an instant while the database keeps its own clock.
 */
export async function shiftLedgerTime(database: Database, ms: number): Promise<void> {
  const by = sql`${ms} * interval '1 millisecond'`;
  await database.rows(sql`update webhook_dispatch set next_attempt_at = next_attempt_at - ${by}`);
  await database.rows(sql`
    update webhook_dispatch_open set next_attempt_at = next_attempt_at - ${by},
      locked_until = locked_until - ${by}, queued_until = queued_until - ${by}
  `);
  await database.rows(sql`update webhook set breaker_open_until = breaker_open_until - ${by}`);
  await database.rows(sql`
    update webhook_route_job set run_at = run_at - ${by}, locked_until = locked_until - ${by}
  `);
}
