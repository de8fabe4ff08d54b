import { sql } from "drizzle-orm";
import type { Database } from "../client.ts";

/** One event of a webhook's stream: its place, and the body the webhook is sent. */
export interface StreamedEvent {
  sequence: number;
  payload: string;
}

/**
 * Up to `limit` events of one webhook's stream after `after`, in sequence order, of `types` when given: the
 * dispatches routing numbered (`webhook_dispatch.sequence`), whatever became of their delivery, for as long as the
 * ledger keeps them. Read on the (webhook, sequence) key.
 */
export async function readEventStream(
  database: Database,
  options: { webhookId: string; after: number; types: readonly string[] | undefined; limit: number },
): Promise<StreamedEvent[]> {
  const { webhookId, after, types, limit } = options;
  const rows = await database.rows<{ sequence: number | string; payload: string }>(sql`
    select sequence, payload from webhook_dispatch
    where webhook_id = ${webhookId} and sequence > ${after}
      ${
        types
          ? sql`and event_type in (${sql.join(
              types.map((type) => sql`${type}`),
              sql`, `,
            )})`
          : sql``
      }
    order by sequence
    limit ${limit}
  `);
  return rows.map((row) => ({ sequence: Number(row.sequence), payload: row.payload }));
}
