import { sql } from "drizzle-orm";
import type { Database } from "../client.ts";
import { NOT_IN_FLIGHT } from "./restart-dispatches.ts";

/**
 * Finishes a webhook's undelivered dispatches without sending them: status
 * `skipped`, the reason as their last error. Only those older than
 * `olderThanSeconds` when given (the held-event age limit), and never one an
 * attempt holds (or a statement, right now): its open row goes first, then
 * the ledger row says why. Returns how many were skipped.
 */
export async function skipHeldDispatches(
  database: Database,
  options: { webhookId: string; reason: string; olderThanSeconds?: number },
): Promise<number> {
  const { webhookId, reason, olderThanSeconds } = options;
  const rows = await database.rows<{ id: string }>(sql`
    with gone as (
      delete from webhook_dispatch_open o
      where o.dispatch_id in (
        select o.dispatch_id from webhook_dispatch_open o
        ${olderThanSeconds === undefined ? sql`` : sql`join webhook_dispatch d on d.id = o.dispatch_id`}
        where o.webhook_id = ${webhookId} and ${NOT_IN_FLIGHT}
          ${olderThanSeconds === undefined ? sql`` : sql`and d.created_at < now() - ${olderThanSeconds} * interval '1 second'`}
        for update of o skip locked)
      returning o.dispatch_id
    )
    update webhook_dispatch d
    set status = 'skipped', last_error = ${reason}, completed_at = now(), updated_at = now()
    where d.id in (select g.dispatch_id from gone g)
    returning d.id
  `);
  return rows.length;
}
