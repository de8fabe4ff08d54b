import { sql } from "drizzle-orm";
import type { Database } from "../../lib/db/client.ts";

/**
 * Gives every open dispatch (pending, error) that a test wrote straight into
 * the ledger its open row, due when the ledger says: what routing, a restart
 * and a test event write beside the ledger row, and what the lane's claims
 * read. Returns how many it opened.
 */
export async function openDispatches(database: Database): Promise<number> {
  const rows = await database.rows<{ n: number }>(sql`
    with opened as (
      insert into webhook_dispatch_open (dispatch_id, webhook_id, next_attempt_at)
      select d.id, d.webhook_id, d.next_attempt_at from webhook_dispatch d
      where d.status in ('pending', 'error')
        and not exists (select 1 from webhook_dispatch_open o where o.dispatch_id = d.id)
      returning 1
    ) select count(*)::int as n from opened
  `);
  return rows[0]!.n;
}
