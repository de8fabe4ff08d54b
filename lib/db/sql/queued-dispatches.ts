import { sql } from "drizzle-orm";
import type { Database } from "../client.ts";
import type { DispatchStatus } from "../schema.ts";

/** The attempt a deliver message is for: its dispatch, run and attempt number, and when the row falls due. */
export interface DeliverTarget {
  id: string;
  run: number;
  attempt: number;
  /** ≤ 0 when due. */
  dueInMs: number;
}

interface TargetRow {
  id: string;
  run: number;
  attempt: number;
  due_in_ms: number | string;
}

const toTarget = (row: TargetRow): DeliverTarget => ({
  id: row.id,
  run: row.run,
  attempt: row.attempt,
  dueInMs: Number(row.due_in_ms),
});

/**
 * Records that deliver messages now carry these open dispatches, until
 * `graceMs` after each falls due, and returns what their messages need (the
 * run and attempt for the idempotency key, when each is due, by the
 * database's clock). Finished rows are left out.
 */
export async function markDispatchesQueued(
  database: Database,
  ids: readonly string[],
  graceMs: number,
): Promise<DeliverTarget[]> {
  if (ids.length === 0) return [];
  const rows = await database.rows<TargetRow>(sql`
    with queued as (
      update webhook_dispatch_open o
      set queued_until = greatest(now(), o.next_attempt_at) + ${graceMs} * interval '1 millisecond'
      where o.dispatch_id in (select jsonb_array_elements_text(${JSON.stringify(ids)}::jsonb))
      returning o.dispatch_id, o.next_attempt_at
    )
    select d.id, d.run, d.attempt_count + 1 as attempt,
      (extract(epoch from (q.next_attempt_at - now())) * 1000)::float8 as due_in_ms
    from queued q join webhook_dispatch d on d.id = q.dispatch_id
  `);
  return rows.map(toTarget);
}

/**
 * Takes up to `limit` dispatches of active webhooks that are due, not leased
 * and carried by no message (one was never sent, was lost, or ran out), and
 * marks them queued for `withinMs` so concurrent sweepers skip them.
 */
export async function takeStrandedDispatches(
  database: Database,
  options: { limit: number; withinMs: number },
): Promise<DeliverTarget[]> {
  const rows = await database.rows<TargetRow>(sql`
    with stranded as (
      select o.dispatch_id from webhook_dispatch_open o
      where o.next_attempt_at <= now()
        and (o.locked_until is null or o.locked_until < now())
        and (o.queued_until is null or o.queued_until < now())
        and exists (select 1 from webhook w where w.id = o.webhook_id and w.status = 'active')
      limit ${options.limit}
      for update of o skip locked
    ),
    queued as (
      update webhook_dispatch_open o
      set queued_until = now() + ${options.withinMs} * interval '1 millisecond'
      from stranded where o.dispatch_id = stranded.dispatch_id
      returning o.dispatch_id
    )
    select d.id, d.run, d.attempt_count + 1 as attempt, 0::float8 as due_in_ms
    from queued q join webhook_dispatch d on d.id = q.dispatch_id
  `);
  return rows.map(toTarget);
}

export interface DispatchState extends DeliverTarget {
  status: DispatchStatus;
  webhookActive: boolean;
  /** How long the lease on it still holds; ≤ 0 when none does. */
  leaseLeftMs: number;
}

/** Why a dispatch named by a message could not be claimed. Undefined when it no longer exists. */
export async function dispatchState(database: Database, id: string): Promise<DispatchState | undefined> {
  const [row] = await database.rows<
    TargetRow & { status: DispatchStatus; webhook_active: boolean; lease_left_ms: number | string }
  >(sql`
    select d.id, d.run, d.attempt_count + 1 as attempt, d.status, w.status = 'active' as webhook_active,
      (extract(epoch from (coalesce(o.next_attempt_at, d.next_attempt_at) - now())) * 1000)::float8 as due_in_ms,
      coalesce(extract(epoch from (o.locked_until - now())) * 1000, 0)::float8 as lease_left_ms
    from webhook_dispatch d join webhook w on w.id = d.webhook_id
      left join webhook_dispatch_open o on o.dispatch_id = d.id
    where d.id = ${id}
  `);
  if (!row) return undefined;
  return {
    ...toTarget(row),
    status: row.status,
    webhookActive: row.webhook_active,
    leaseLeftMs: Number(row.lease_left_ms),
  };
}

/** Forgets that messages carry these dispatches (never sent, or acknowledged without an attempt). */
export async function clearDispatchesQueued(database: Database, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  await database.rows(sql`
    update webhook_dispatch_open set queued_until = null
    where dispatch_id in (select jsonb_array_elements_text(${JSON.stringify(ids)}::jsonb))
  `);
}
