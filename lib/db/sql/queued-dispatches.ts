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
 * Takes up to `limit` dispatches of active webhooks (whose endpoint consented, when asked) that are due, not leased
 * and carried by no message (one was never sent, was lost, or ran out), and
 * marks them queued for `withinMs` so concurrent sweepers skip them. A
 * webhook whose circuit breaker is open gives none: its held dispatches wait
 * for the breaker, costing nothing. Once the breaker lets a probe through,
 * it gives one, its earliest, and only while none of its due dispatches is
 * carried: that one message is the probe, and a probe that succeeds hands
 * the rest on.
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
        and exists (
          select 1 from webhook w
          where w.id = o.webhook_id and w.status = 'active' and w.consent_state is distinct from 'pending'
            and w.breaker_open_until is null)
      limit ${options.limit}
      for update of o skip locked
    ),
    probes as (
      select p.dispatch_id from webhook w
        cross join lateral (
          select o.dispatch_id from webhook_dispatch_open o
          where o.webhook_id = w.id and o.next_attempt_at <= now()
            and (o.locked_until is null or o.locked_until < now())
          order by o.next_attempt_at limit 1
        ) p
      where w.status = 'active' and w.consent_state is distinct from 'pending' and w.breaker_open_until <= now()
        and not exists (
          select 1 from webhook_dispatch_open c
          where c.webhook_id = w.id and c.next_attempt_at <= now() and c.queued_until >= now())
      limit ${options.limit}
    ),
    queued as (
      update webhook_dispatch_open o
      set queued_until = now() + ${options.withinMs} * interval '1 millisecond'
      where o.dispatch_id in (
        select dispatch_id from stranded
        union
        (select dispatch_id from probes limit greatest(0, ${options.limit} - (select count(*) from stranded))))
      returning o.dispatch_id
    )
    select d.id, d.run, d.attempt_count + 1 as attempt, 0::float8 as due_in_ms
    from queued q join webhook_dispatch d on d.id = q.dispatch_id
  `);
  return rows.map(toTarget);
}

/**
 * Records that a message carries this dispatch for `ms` from now: one put
 * back to look again, or one acknowledged because an invocation at its
 * webhook takes it next. The sweep leaves it alone until then.
 */
export async function carryDispatch(database: Database, id: string, ms: number): Promise<void> {
  await database.rows(sql`
    update webhook_dispatch_open set queued_until = now() + ${Math.round(ms)} * interval '1 millisecond'
    where dispatch_id = ${id}
  `);
}

/**
 * The webhook's earliest due dispatch no lease holds and no earlier event of its resource holds back (`resource`
 * ordering), if any: what an invocation that has finished one takes next.
 */
export async function nextDueDispatch(database: Database, webhookId: string): Promise<string | undefined> {
  const [row] = await database.rows<{ dispatch_id: string }>(sql`
    select o.dispatch_id from webhook_dispatch_open o
    where o.webhook_id = ${webhookId} and o.next_attempt_at <= now()
      and (o.locked_until is null or o.locked_until < now())
      and not hooklane_held_in_order(o.webhook_id, o.order_key, o.sequence,
        (select w.ordering_hold_max from webhook w where w.id = o.webhook_id), now())
    order by o.next_attempt_at limit 1
  `);
  return row?.dispatch_id;
}

export interface DispatchState extends DeliverTarget {
  status: DispatchStatus;
  /** Its webhook is active and its endpoint consented (when asked): the lane may send it. */
  webhookActive: boolean;
  /** How long the lease on it still holds; ≤ 0 when none does. */
  leaseLeftMs: number;
  /** How long its webhook's circuit breaker stays open (or shut behind a probe in flight); ≤ 0 when it lets through. */
  breakerLeftMs: number;
  /** Its webhook's rate limit, per second, if any. */
  rateLimit: number | null;
  /**
   * Workers at its webhook now, per the lane's in-flight book: with an
   * attempt of it in flight, or waiting for its next rate token to take one.
   * Each takes the webhook's next due dispatches in turn.
   */
  webhookWorkers: number;
  /** Due dispatches of its webhook ahead of it (counted up to 10,000), when the webhook has a rate limit; else 0. */
  ahead: number;
  /**
   * With `resource` ordering, while earlier events of its resource hold it back: how long until the soonest of them
   * is next due (or its lease ends, or it stops holding), ≤ 0 when that is now; null when nothing holds it back.
   */
  orderingWaitMs: number | null;
}

/** Why a dispatch named by a message could not be claimed. Undefined when it no longer exists. */
export async function dispatchState(database: Database, id: string): Promise<DispatchState | undefined> {
  const [row] = await database.rows<
    TargetRow & {
      status: DispatchStatus;
      webhook_active: boolean;
      lease_left_ms: number | string;
      breaker_left_ms: number | string;
      rate_limit: number | null;
      webhook_workers: number | string;
      ahead: number | string;
      ordering_wait_ms: number | string | null;
    }
  >(sql`
    select d.id, d.run, d.attempt_count + 1 as attempt, d.status, w.status = 'active' and w.consent_state is distinct from 'pending' as webhook_active,
      (extract(epoch from (coalesce(o.next_attempt_at, d.next_attempt_at) - now())) * 1000)::float8 as due_in_ms,
      coalesce(extract(epoch from (o.locked_until - now())) * 1000, 0)::float8 as lease_left_ms,
      coalesce(extract(epoch from (w.breaker_open_until - now())) * 1000, 0)::float8 as breaker_left_ms,
      w.rate_limit,
      (select count(*) from webhook_lane_in_flight b
        where b.until > now() and (b.by_webhook -> d.webhook_id) is not null) as webhook_workers,
      (select count(*) from (
        select 1 from webhook_dispatch_open a
        where w.rate_limit is not null and o.dispatch_id is not null and a.webhook_id = d.webhook_id
          and a.next_attempt_at < o.next_attempt_at
        limit 10000) ahead) as ahead,
      -- Held back by earlier events of its resource: until the soonest of them is next due, or stops holding it.
      (select extract(epoch from min(least(
          greatest(b.next_attempt_at, coalesce(b.locked_until, b.next_attempt_at)),
          coalesce(b.failing_since + w.ordering_hold_max * interval '1 second', 'infinity'))) - now()) * 1000
        from webhook_dispatch_open b
        where o.order_key is not null and b.webhook_id = o.webhook_id and b.order_key = o.order_key
          and b.sequence < o.sequence
          and (b.failing_since is null or b.failing_since > now() - w.ordering_hold_max * interval '1 second')
      )::float8 as ordering_wait_ms
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
    breakerLeftMs: Number(row.breaker_left_ms),
    rateLimit: row.rate_limit === null ? null : Number(row.rate_limit),
    webhookWorkers: Number(row.webhook_workers),
    ahead: Number(row.ahead),
    orderingWaitMs: row.ordering_wait_ms === null ? null : Number(row.ordering_wait_ms),
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
