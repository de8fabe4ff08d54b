import { sql, type SQL } from "drizzle-orm";
import type { Database } from "../client.ts";
import { wakeListenSession } from "./listen-wake.ts";

/** A dispatch no attempt is working on, by its open row `o`: not leased, or its lease ran out. */
export const NOT_IN_FLIGHT = sql.raw(`(o.locked_until is null or o.locked_until < now())`);

/**
 * The part of a statement that starts dispatches over: a new run from
 * attempt 1 with the full schedule, due now, unleased. `targets` is a query
 * of `id, webhook_id, status` over `webhook_dispatch d` that locks the ledger
 * rows it picks; of those, the finished ones and the open ones no attempt
 * holds start over (their open rows taken with SKIP LOCKED: one a claim or a
 * record holds right now is left to it). Defines the CTEs `target` and
 * `restarted` (the ids started over), for a statement to go on from. Signing
 * reads the webhook's current secret at attempt time, so the new run uses it.
 * A listen session's streams are told at commit (LISTEN_WAKE_CHANNEL).
 */
export function restartRows(targets: SQL, recoveryId?: string): SQL {
  return sql`
    target as (${targets}),
    opened as (
      select o.dispatch_id, o.locked_until from webhook_dispatch_open o
      where o.dispatch_id in (select t.id from target t)
      for update skip locked
    ),
    takes as (
      select t.id, t.webhook_id from target t
      where t.status not in ('pending', 'error')
        or exists (select 1 from opened o where o.dispatch_id = t.id and ${NOT_IN_FLIGHT})
    ),
    reopened as (
      insert into webhook_dispatch_open (dispatch_id, webhook_id, next_attempt_at)
      select k.id, k.webhook_id, now() from takes k
      on conflict (dispatch_id) do update
      set next_attempt_at = now(), locked_until = null, locked_by = null, queued_until = null
    ),
    restarted as (
      update webhook_dispatch d
      set status = 'pending', run = d.run + 1, attempt_count = 0, next_attempt_at = now(), completed_at = null,
          updated_at = now()${recoveryId === undefined ? sql`` : sql`, recovery_id = ${recoveryId}`}
      from takes k where d.id = k.id
      returning d.id, ${wakeListenSession(sql`d.webhook_id`)} as woken
    )`;
}

/**
 * Starts one finished or failing dispatch over (manual retry). Returns the
 * row, or undefined when it is pending or an attempt holds it right now.
 */
export async function restartDispatch(database: Database, id: string): Promise<{ id: string } | undefined> {
  const [row] = await database.rows<{ id: string }>(sql`
    with ${restartRows(sql`
      select d.id, d.webhook_id, d.status from webhook_dispatch d
      where d.id = ${id} and d.status in ('error', 'exhausted', 'success')
      for update of d`)}
    select id from restarted
  `);
  return row;
}
