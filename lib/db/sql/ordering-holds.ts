import { sql } from "drizzle-orm";
import type { Database } from "../client.ts";

/**
 * The earliest event of the same resource that an open dispatch of a webhook with `resource` ordering waits for,
 * by the claim's own rule (hooklane_held_in_order): its event id, or null when it waits for nothing.
 */
export async function heldBehind(database: Database, dispatchId: string): Promise<string | null> {
  const [row] = await database.rows<{ event_id: string }>(sql`
    select d.event_id
    from webhook_dispatch_open o
      join webhook w on w.id = o.webhook_id
      join webhook_dispatch_open b on b.webhook_id = o.webhook_id and b.order_key = o.order_key
        and b.sequence < o.sequence
        and (b.failing_since is null or b.failing_since > now() - w.ordering_hold_max * interval '1 second')
      join webhook_dispatch d on d.id = b.dispatch_id
    where o.dispatch_id = ${dispatchId} and o.order_key is not null
    order by b.sequence
    limit 1
  `);
  return row?.event_id ?? null;
}

/** A webhook no longer ordered: none of its open dispatches waits for an earlier event any more. */
export async function releaseOrdering(database: Database, webhookId: string): Promise<void> {
  await database.rows(sql`
    update webhook_dispatch_open set order_key = null, sequence = null, failing_since = null
    where webhook_id = ${webhookId} and order_key is not null
  `);
}
