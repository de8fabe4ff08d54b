import { sql } from "drizzle-orm";
import type { Database } from "../client.ts";

/** One hour's attempts in one duration bucket, summed over the webhooks asked for. */
export interface HealthHourRow {
  hour: Date;
  bucket: number;
  attempts: number;
  succeeded: number;
}

/**
 * The hourly health rollups (`webhook_health_hour`) from `since` on, summed
 * per hour and duration bucket over one webhook, or over every webhook of an
 * account (deleted ones too: their past is the account's). Read on the
 * rollups' key, never the attempt log; with the database's clock.
 */
export async function readHealthHours(
  database: Database,
  of: { webhookId: string } | { account: string },
  since: Date,
): Promise<{ now: Date; rows: HealthHourRow[] }> {
  const webhooks =
    "webhookId" in of
      ? sql`array[${of.webhookId}]::text[]`
      : sql`array(select id from webhook where account = ${of.account})`;
  const rows = await database.rows<{
    now: Date | string;
    hour: Date | string | null;
    bucket: number | null;
    attempts: number | string | null;
    succeeded: number | string | null;
  }>(sql`
    select now() as now, h.hour, h.bucket, h.attempts, h.succeeded
    from (select 1) one
    left join (
      select hour, bucket, sum(attempts) as attempts, sum(succeeded) as succeeded
      from webhook_health_hour
      where webhook_id = any (${webhooks}) and hour >= ${since.toISOString()}::timestamptz
      group by hour, bucket
    ) h on true
  `);
  return {
    now: new Date(rows[0]!.now),
    rows: rows
      .filter((r) => r.hour !== null)
      .map((r) => ({
        hour: new Date(r.hour!),
        bucket: r.bucket!,
        attempts: Number(r.attempts),
        succeeded: Number(r.succeeded),
      })),
  };
}
