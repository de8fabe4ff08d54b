import { sql } from "drizzle-orm";
import type { Database } from "../client.ts";
import { NOT_IN_FLIGHT } from "./restart-dispatches.ts";

/** What one pruning step removed. */
export interface PrunedLedger {
  /** Open dispatches of deleted webhooks, finished as skipped. */
  skipped: number;
  attempts: number;
  dispatches: number;
  notifications: number;
  webhooks: number;
}

/**
 * One bounded step of retention, before `cutoff`. First, up to `limit`
 * open dispatches of deleted webhooks become `skipped`: an attempt that held
 * one when its webhook was deleted records it as failing, and nothing claims
 * a deleted webhook's dispatches, so without this it would stay open (and
 * unprunable) for ever. Then up to `limit` attempts
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
  const skipped = await count(sql`
    with finished as (
      update webhook_dispatch d
      set status = 'skipped', last_error = 'webhook deleted', completed_at = now(), updated_at = now(),
          locked_until = null, locked_by = null, queued_until = null
      where d.id in (
        select d.id from webhook_dispatch d join webhook w on w.id = d.webhook_id
        where w.deleted_at is not null and d.status in ('pending', 'error') and ${NOT_IN_FLIGHT}
        limit ${limit}
        for update of d skip locked)
      returning 1
    ) select count(*)::int as n from finished
  `);
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
  return { skipped, attempts, dispatches, notifications, webhooks };
}
