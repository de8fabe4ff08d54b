import { sql } from "drizzle-orm";
import type { Database } from "../client.ts";
import { restartRows } from "./restart-dispatches.ts";

/**
 * The dispatches job `r` takes, created in [since, until): a `recover` job's
 * webhook's failing or exhausted ones; a `resend` job's event type's finished
 * ones (delivered included) across its account's live webhooks.
 */
const IN_WINDOW = sql.raw(`
  d.created_at >= r.since and d.created_at < r.until
  and (
    (r.kind = 'recover' and d.webhook_id = r.webhook_id and d.status in ('error', 'exhausted'))
    or (r.kind = 'resend' and d.event_type = r.event_type and d.status in ('success', 'error', 'exhausted')
        and d.webhook_id in (select w2.id from webhook w2
                             where w2.account is not distinct from r.account and w2.deleted_at is null))
  )`);

/**
 * Leases the next unfinished recovery job that no live lease holds, with
 * `FOR UPDATE SKIP LOCKED`, so concurrent sweepers never run the same job at
 * once. Jobs take turns one batch at a time, across owners first: the job
 * whose owning account has waited longest since its last turn goes next, so
 * one account's recoveries cannot hold up another's. Counts the window's
 * dispatches the first time a job is claimed. Returns the job's id, or
 * undefined when there is nothing to do.
 */
export async function claimRecoveryJob(
  database: Database,
  options: { workerId: string; leaseMs: number },
): Promise<string | undefined> {
  const [row] = await database.rows<{ id: string }>(sql`
    with open as (
      select r.id, r.turn_at, r.created_at,
        max(r.turn_at) over (partition by coalesce(w.account, r.account, '')) as owner_turn_at
      from webhook_recovery r left join webhook w on w.id = r.webhook_id
      where r.status <> 'completed'
    ),
    next as (
      select r.id from webhook_recovery r join open o on o.id = r.id
      where r.locked_until is null or r.locked_until < now()
      order by o.owner_turn_at nulls first, r.turn_at nulls first, r.created_at
      limit 1
      for update of r skip locked
    )
    update webhook_recovery r
    set status = 'running',
        locked_until = now() + ${options.leaseMs} * interval '1 millisecond',
        locked_by = ${options.workerId},
        turn_at = now(),
        started_at = coalesce(r.started_at, now()),
        total = coalesce(r.total, (select count(*)::int from webhook_dispatch d where ${IN_WINDOW}))
    from next
    where r.id = next.id
    returning r.id
  `);
  return row?.id;
}

/**
 * Puts the next `limit` dispatches of a leased recovery back to pending (a
 * new run, due now), advances its cursor and counters, and releases the
 * lease; a short batch completes the job. Dispatches an attempt holds right
 * now are left to that attempt. All in one statement, so a crash loses
 * nothing and repeats nothing. Returns the requeued ids (to wake the lane).
 */
export async function requeueRecoveryBatch(
  database: Database,
  options: { recoveryId: string; workerId: string; limit: number },
): Promise<string[]> {
  const { recoveryId, workerId, limit } = options;
  const [row] = await database.rows<{ ids: string[] }>(sql`
    with ${restartRows(
      sql`
      select d.id, d.webhook_id, d.status, d.created_at
      from webhook_dispatch d, webhook_recovery r
      where r.id = ${recoveryId} and ${IN_WINDOW}
        and (r.cursor_id is null or (d.created_at, d.id) > (r.cursor_created_at, r.cursor_id))
      order by d.created_at, d.id
      limit ${limit}
      for update of d skip locked`,
      recoveryId,
    )},
    last as (select created_at, id from target order by created_at desc, id desc limit 1),
    progress as (
      update webhook_recovery r
      set requeued = r.requeued + (select count(*) from restarted),
          cursor_created_at = coalesce((select created_at from last), r.cursor_created_at),
          cursor_id = coalesce((select id from last), r.cursor_id),
          status = case when (select count(*) from target) < ${limit} then 'completed' else 'running' end,
          completed_at = case when (select count(*) from target) < ${limit} then now() end,
          locked_until = null,
          locked_by = null
      where r.id = ${recoveryId} and r.locked_by = ${workerId}
    )
    select coalesce((select json_agg(id) from restarted), '[]'::json) as ids
  `);
  return row?.ids ?? [];
}

/** How the dispatches a recovery requeued have fared since. */
export async function recoveryOutcome(
  database: Database,
  recoveryId: string,
): Promise<{ delivered: number; failed: number }> {
  const [row] = await database.rows<{ delivered: number | string; failed: number | string }>(sql`
    select count(*) filter (where status = 'success') as delivered,
           count(*) filter (where status = 'exhausted') as failed
    from webhook_dispatch where recovery_id = ${recoveryId}
  `);
  return { delivered: Number(row?.delivered ?? 0), failed: Number(row?.failed ?? 0) };
}
