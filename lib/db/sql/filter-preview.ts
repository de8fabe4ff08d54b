import { sql } from "drizzle-orm";
import type { Database } from "../client.ts";

/** How many recent events a filter's preview is judged on. */
export const PREVIEW_EVENTS = 100;

export interface FilterPreview {
  /** How many of the recent events the filter matches. */
  matched: number;
  /** How many recent events there were to judge (at most PREVIEW_EVENTS). */
  of: number;
}

/**
 * How a filter (its compiled path) would have judged the newest events the
 * delivery log holds for these event types (`*`: any) — an account's, read
 * through its own webhooks' logs (each by its (webhook, created) index), or
 * for `account` null every account's, by type — with the attributes each
 * was published with. Test events are left out; an event that reached
 * several webhooks counts once.
 */
export async function previewFilter(
  database: Database,
  options: { account: string | null; events: readonly string[]; path: string },
): Promise<FilterPreview> {
  const every = options.events.includes("*");
  const types = `{${options.events.map((type) => JSON.stringify(type)).join(",")}}`;
  const ofType = every ? sql`true` : sql`d.event_type = any (${types}::text[])`;
  const recent =
    options.account === null
      ? sql`
        select d.event_id, d.attributes, d.created_at
        from (${every ? sql`select internal as type from webhook_event_type` : sql`select unnest(${types}::text[]) as type`}) t
          cross join lateral (
            select d.event_id, d.attributes, d.created_at from webhook_dispatch d
            where d.event_type = t.type and d.test_mode is null
            order by d.created_at desc limit ${PREVIEW_EVENTS}
          ) d`
      : sql`
        select d.event_id, d.attributes, d.created_at
        from webhook w cross join lateral (
          select d.event_id, d.attributes, d.created_at from webhook_dispatch d
          where d.webhook_id = w.id and d.test_mode is null and ${ofType}
          order by d.created_at desc limit ${PREVIEW_EVENTS}
        ) d
        where w.account = ${options.account}`;
  const [row] = await database.rows<{ matched: number; of: number }>(sql`
    with recent as (${recent}),
    events as (
      select e.attributes from (
        select distinct on (r.event_id) r.event_id, r.attributes, r.created_at from recent r order by r.event_id
      ) e
      order by e.created_at desc limit ${PREVIEW_EVENTS}
    )
    select count(*) filter (where coalesce(coalesce(attributes, '{}') @@ ${options.path}::jsonpath, false))::int as matched,
      count(*)::int as of
    from events
  `);
  return { matched: row!.matched, of: row!.of };
}
