import { sql } from "drizzle-orm";
import type { Database } from "../client.ts";
import type { DispatchStatus } from "../schema.ts";

/** Records that deliver messages now carry these dispatches, until `withinMs` from now. */
export async function markDispatchesQueued(
  database: Database,
  ids: readonly string[],
  withinMs: number,
): Promise<void> {
  if (ids.length === 0) return;
  await database.rows(sql`
    update webhook_dispatch
    set queued_until = now() + ${withinMs} * interval '1 millisecond'
    where id in (select jsonb_array_elements_text(${JSON.stringify(ids)}::jsonb))
  `);
}

/**
 * Takes up to `limit` dispatches of active webhooks that are due, not leased
 * and carried by no message (one was never sent, was lost, or ran out), and
 * marks them queued for `withinMs` so concurrent sweepers skip them.
 */
export async function takeStrandedDispatches(
  database: Database,
  options: { limit: number; withinMs: number },
): Promise<Array<{ id: string; attempt: number }>> {
  const rows = await database.rows<{ id: string; attempt_count: number }>(sql`
    with stranded as (
      select d.id from webhook_dispatch d
      where d.status in ('pending', 'error')
        and d.next_attempt_at <= now()
        and (d.locked_until is null or d.locked_until < now())
        and (d.queued_until is null or d.queued_until < now())
        and exists (select 1 from webhook w where w.id = d.webhook_id and w.status = 'active')
      order by d.next_attempt_at
      limit ${options.limit}
      for update of d skip locked
    )
    update webhook_dispatch d
    set queued_until = now() + ${options.withinMs} * interval '1 millisecond'
    from stranded where d.id = stranded.id
    returning d.id, d.attempt_count
  `);
  return rows.map((row) => ({ id: row.id, attempt: row.attempt_count + 1 }));
}

export interface DispatchState {
  status: DispatchStatus;
  webhookActive: boolean;
  /** ≤ 0 when due. */
  dueInMs: number;
  leased: boolean;
}

/** Why a dispatch named by a message could not be claimed. Undefined when it no longer exists. */
export async function dispatchState(database: Database, id: string): Promise<DispatchState | undefined> {
  const [row] = await database.rows<{
    status: DispatchStatus;
    webhook_active: boolean;
    due_in_ms: number | string;
    leased: boolean;
  }>(sql`
    select d.status, w.status = 'active' as webhook_active,
      (extract(epoch from (d.next_attempt_at - now())) * 1000)::float8 as due_in_ms,
      coalesce(d.locked_until > now(), false) as leased
    from webhook_dispatch d join webhook w on w.id = d.webhook_id
    where d.id = ${id}
  `);
  if (!row) return undefined;
  return { status: row.status, webhookActive: row.webhook_active, dueInMs: Number(row.due_in_ms), leased: row.leased };
}

/** Forgets that a message carries this dispatch (its message was acknowledged without an attempt). */
export async function clearDispatchQueued(database: Database, id: string): Promise<void> {
  await database.rows(sql`update webhook_dispatch set queued_until = null where id = ${id}`);
}
