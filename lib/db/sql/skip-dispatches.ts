import { sql } from "drizzle-orm";
import type { Database } from "../client.ts";
import { NOT_IN_FLIGHT } from "./restart-dispatches.ts";

/**
 * Finishes a webhook's undelivered dispatches without sending them: status
 * `skipped`, the reason as their last error. Only those older than
 * `olderThanSeconds` when given (the held-event age limit), and never one an
 * attempt holds right now. Returns how many were skipped.
 */
export async function skipHeldDispatches(
  database: Database,
  options: { webhookId: string; reason: string; olderThanSeconds?: number },
): Promise<number> {
  const { webhookId, reason, olderThanSeconds } = options;
  const rows = await database.rows<{ id: string }>(sql`
    update webhook_dispatch d
    set status = 'skipped', last_error = ${reason}, completed_at = now(), updated_at = now(),
        locked_until = null, locked_by = null, queued_until = null
    where d.webhook_id = ${webhookId} and d.status in ('pending', 'error') and ${NOT_IN_FLIGHT}
      ${olderThanSeconds === undefined ? sql`` : sql`and d.created_at < now() - ${olderThanSeconds} * interval '1 second'`}
    returning d.id
  `);
  return rows.length;
}
