import { sql } from "drizzle-orm";
import type { Database } from "../client.ts";

/** What one pruning step removed. */
export interface PrunedLedger {
  attempts: number;
  dispatches: number;
  notifications: number;
  webhooks: number;
}

/**
 * One bounded step of retention, before `cutoff`: up to `limit` attempts
 * started before it (oldest first), then up to `limit` finished dispatches
 * (delivered, exhausted or skipped) completed before it, then notifications
 * no longer waiting to be mailed, then soft-deleted webhooks deleted before
 * it whose log is empty. Short statements on indexed ranges that skip rows
 * someone holds, so claims and attempts are never kept waiting; open
 * dispatches are never touched.
 */
export async function pruneLedger(database: Database, options: { cutoff: Date; limit: number }): Promise<PrunedLedger> {
  const cutoff = sql`${options.cutoff.toISOString()}::timestamptz`;
  const { limit } = options;
  const count = async (statement: ReturnType<typeof sql>) => (await database.rows<{ n: number }>(statement))[0]?.n ?? 0;
  const attempts = await count(sql`
    with gone as (
      delete from webhook_attempt where id in (
        select id from webhook_attempt where started_at < ${cutoff} order by started_at limit ${limit}
        for update skip locked)
      returning 1
    ) select count(*)::int as n from gone
  `);
  const dispatches = await count(sql`
    with gone as (
      delete from webhook_dispatch where id in (
        select id from webhook_dispatch
        where status in ('success', 'exhausted', 'skipped') and completed_at < ${cutoff}
        order by completed_at limit ${limit}
        for update skip locked)
      returning 1
    ) select count(*)::int as n from gone
  `);
  const notifications = await count(sql`
    with gone as (
      delete from webhook_notification where id in (
        select id from webhook_notification
        where created_at < ${cutoff} and mail_status <> 'pending'
          and not (kind = 'dispatch.exhausted' and digest_id is null)
        order by id limit ${limit}
        for update skip locked)
      returning 1
    ) select count(*)::int as n from gone
  `);
  const webhooks = await count(sql`
    with gone as (
      delete from webhook where id in (
        select w.id from webhook w
        where w.deleted_at < ${cutoff}
          and not exists (select 1 from webhook_dispatch d where d.webhook_id = w.id)
        limit ${limit}
        for update skip locked)
      returning 1
    ) select count(*)::int as n from gone
  `);
  return { attempts, dispatches, notifications, webhooks };
}
