import { sql } from "drizzle-orm";
import type { Database } from "../client.ts";
import type { WebhookDispatch } from "../schema.ts";

/**
 * What starting a dispatch over sets, for a row aliased `d`: a new run from
 * attempt 1 with the full schedule, due now, unleased. Signing reads the
 * webhook's current secret at attempt time, so the new run uses it.
 */
export const RESTART_RUN = sql.raw(`
  status = 'pending', run = d.run + 1, attempt_count = 0, next_attempt_at = now(),
  locked_until = null, locked_by = null, completed_at = null, updated_at = now()`);

/** A dispatch no attempt is working on: not leased, or its lease ran out. */
export const NOT_IN_FLIGHT = sql.raw(`(d.locked_until is null or d.locked_until < now())`);

/**
 * Starts one finished or failing dispatch over (manual retry). Returns the
 * row, or undefined when it is pending or an attempt holds it right now.
 */
export async function restartDispatch(database: Database, id: string): Promise<{ id: string } | undefined> {
  const [row] = await database.rows<Pick<WebhookDispatch, "id">>(sql`
    update webhook_dispatch d set ${RESTART_RUN}
    where d.id = ${id} and d.status in ('error', 'exhausted', 'success') and ${NOT_IN_FLIGHT}
    returning d.id
  `);
  return row;
}
