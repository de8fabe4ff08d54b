import { sql } from "drizzle-orm";
import type { Database } from "../client.ts";

/**
 * Disables every active webhook that has failed 100 % of its deliveries for
 * the whole window ending at `now`, and returns their ids. A webhook
 * qualifies when, with `start = now - windowMs`:
 * - it has been active since `start` or earlier (a re-enabled one gets a full window again);
 * - no dispatch of it succeeded after `start` (every attempt in the window failed);
 * - a failed dispatch was created after `start`, and another at or before
 *   `start` but after its last success: the failures span the window.
 * Test events count for nothing here (their attempts are not in the
 * webhook's health either). Concurrent callers disable each webhook once: only the one whose update
 * finds it still active gets its id back.
 */
export async function disableFailingWebhooks(
  database: Database,
  options: { now: Date; windowMs: number; reason: string },
): Promise<string[]> {
  const rows = await database.rows<{ id: string }>(sql`
    with bounds as (
      select ${options.now.toISOString()}::timestamptz - ${options.windowMs} * interval '1 millisecond' as start
    ),
    -- The latest success of each webhook is its health row's, kept by the record statement.
    failing as (
      select w.id
      from webhook w cross join bounds b left join webhook_health h on h.webhook_id = w.id
      where w.status = 'active'
        and w.status_changed_at <= b.start
        and coalesce(h.last_success_at, '-infinity') <= b.start
        and exists (
          select 1 from webhook_dispatch d
          where d.webhook_id = w.id and d.status in ('error', 'exhausted') and d.attempt_count > 0
            and d.event_type <> 'webhook.test'
            and d.created_at > b.start)
        and exists (
          select 1 from webhook_dispatch d
          where d.webhook_id = w.id and d.status in ('error', 'exhausted') and d.attempt_count > 0
            and d.event_type <> 'webhook.test'
            and d.created_at <= b.start
            and d.created_at > coalesce(h.last_success_at, '-infinity'))
    ),
    -- Locked in id order, as every statement changing several webhooks locks them (the record statement's breakers).
    locked as (
      select w.id from webhook w join failing f on f.id = w.id
      where w.status = 'active'
      order by w.id
      for no key update of w
    )
    update webhook w
    set status = 'disabled', disabled_reason = ${options.reason},
        status_changed_at = ${options.now.toISOString()}::timestamptz, updated_at = now()
    from locked l
    where w.id = l.id and w.status = 'active'
    returning w.id
  `);
  return rows.map((row) => row.id);
}
