import { sql } from "drizzle-orm";
import type { Database } from "../client.ts";

/** Hourly health rows are kept eight days (the 7-day history always whole); lane minutes one day. */
export const HEALTH_RETENTION = { hourMs: 8 * 86_400_000, minuteMs: 86_400_000 } as const;

/**
 * Deletes health rollups past HEALTH_RETENTION, at most `limit` rows of each
 * table per call, oldest first (both tables are indexed by time). Returns
 * whether a limit was reached: more may be waiting.
 */
export async function pruneHealthRollups(database: Database, limit: number): Promise<boolean> {
  const [row] = await database.rows<{ hours: number | string; minutes: number | string }>(sql`
    with hours as (
      delete from webhook_health_hour where (webhook_id, hour, bucket) in (
        select webhook_id, hour, bucket from webhook_health_hour
        where hour < now() - ${HEALTH_RETENTION.hourMs} * interval '1 millisecond'
        order by hour limit ${limit}
      )
      returning 1
    ),
    minutes as (
      delete from webhook_lane_minute where (minute, shard) in (
        select minute, shard from webhook_lane_minute
        where minute < now() - ${HEALTH_RETENTION.minuteMs} * interval '1 millisecond'
        order by minute limit ${limit}
      )
      returning 1
    )
    select (select count(*) from hours) as hours, (select count(*) from minutes) as minutes
  `);
  return Number(row?.hours ?? 0) >= limit || Number(row?.minutes ?? 0) >= limit;
}
