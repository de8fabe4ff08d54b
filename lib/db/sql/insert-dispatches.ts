import { sql } from "drizzle-orm";
import type { Database } from "../client.ts";

/**
 * Inserts one pending dispatch per webhook that hears `eventType` for
 * `account`: global webhooks always, account webhooks only for their own
 * account. Paused and disabled webhooks get their rows too (delivered on
 * re-enable). A deprecated type (or one never synced) gets none, even from a
 * publisher whose subscribed set is up to 30 s old. Idempotent per event x
 * webhook: a redelivered route message inserts nothing and returns only the
 * ids it created.
 */
export async function insertDispatches(
  database: Database,
  event: { eventId: string; eventType: string; account: string | null; payload: string },
): Promise<string[]> {
  const rows = await database.rows<{ id: string }>(sql`
    insert into webhook_dispatch (event_id, event_type, webhook_id, account, payload)
    select ${event.eventId}, ${event.eventType}, w.id, ${event.account}::text, ${event.payload}
    from webhook w
    where (w.events @> array[${event.eventType}]::text[] or w.events @> array['*']::text[])
      and (w.account is null or w.account = ${event.account}::text)
      and w.deleted_at is null
      and exists (select 1 from webhook_event_type t where t.internal = ${event.eventType} and not t.deprecated)
    on conflict (event_id, webhook_id) do nothing
    returning id
  `);
  return rows.map((row) => row.id);
}
