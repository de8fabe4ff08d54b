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
 * One bounded step of retention, before `cutoff`. First, up to `limit` open
 * dispatches of deleted webhooks become `skipped`: an attempt that held one
 * when its webhook was deleted records it as failing, and nothing claims a
 * deleted webhook's dispatches, so without this it would stay open (and
 * unprunable) for ever. Then up to `limit` attempts started before it, then
 * up to `limit` finished dispatches (delivered, exhausted or skipped)
 * completed before it (oldest first per event type), then notifications no
 * longer waiting to be mailed, then soft-deleted webhooks deleted before it
 * whose log is empty. Short statements on indexed ranges that skip rows
 * someone holds, so claims and attempts are never kept waiting; open
 * dispatches are never touched.
 */
export async function pruneLedger(database: Database, options: { cutoff: Date; limit: number }): Promise<PrunedLedger> {
  const cutoff = sql`${options.cutoff.toISOString()}::timestamptz`;
  const { limit } = options;
  const count = async (statement: ReturnType<typeof sql>) => (await database.rows<{ n: number }>(statement))[0]?.n ?? 0;
  const skipped = await count(sql`
    with gone as (
      delete from webhook_dispatch_open o
      where o.dispatch_id in (
        select o.dispatch_id from webhook_dispatch_open o join webhook w on w.id = o.webhook_id
        where w.deleted_at is not null and ${NOT_IN_FLIGHT}
        limit ${limit}
        for update of o skip locked)
      returning o.dispatch_id
    ),
    finished as (
      update webhook_dispatch d
      set status = 'skipped', last_error = 'webhook deleted', completed_at = now(), updated_at = now()
      where d.id in (select g.dispatch_id from gone g)
      returning 1
    ) select count(*)::int as n from finished
  `);
  const attempts = await count(sql`
    with gone as (
      delete from webhook_attempt where (dispatch_id, run, attempt) in (
        select dispatch_id, run, attempt from webhook_attempt where started_at < ${cutoff}
        limit ${limit}
        for update skip locked)
      returning 1
    ) select count(*)::int as n from gone
  `);
  // By type and creation (the search index): a dispatch finished before the cutoff was created before it too. No
  // index reads completed_at, which each attempt's record rewrites heap-only.
  const dispatches = await count(sql`
    with recursive types as (
      (select d.event_type from webhook_dispatch d order by d.event_type limit 1)
      union all
      select (select d.event_type from webhook_dispatch d where d.event_type > t.event_type
              order by d.event_type limit 1)
      from types t where t.event_type is not null
    ),
    gone as (
      delete from webhook_dispatch where id in (
        select old.id from types t cross join lateral (
          select d.id from webhook_dispatch d
          where d.event_type = t.event_type and d.created_at < ${cutoff}
            and d.status in ('success', 'exhausted', 'skipped') and d.completed_at < ${cutoff}
          order by d.created_at limit ${limit}
          for update skip locked) old
        where t.event_type is not null
        limit ${limit})
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
