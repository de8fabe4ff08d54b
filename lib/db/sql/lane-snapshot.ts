import { sql } from "drizzle-orm";
import type { Database } from "../client.ts";
import { boundedRead } from "./bounded-read.ts";

/** The lane as the ledger sees it at one instant: what waits, what runs, who runs it. */
export interface LaneSnapshot {
  at: Date;
  deliver: {
    /** Open dispatches: waiting for their first attempt, and failed waiting for a retry. */
    pending: number;
    error: number;
    /** Due now (by time) and held by no lease, whatever holds them back. */
    due: number;
    /** Held by a lease: being attempted. */
    inFlight: number;
    /** Open dispatches of paused or disabled webhooks: kept, not late. */
    heldInactive: number;
    /** Open dispatches of webhooks whose circuit breaker is open. */
    heldBreaker: number;
    /** Open dispatches of active webhooks whose endpoint has not answered the consent request yet. */
    heldConsent: number;
    /** The oldest due dispatch that should be moving: see OLDEST_DUE. */
    oldestDueAt: Date | null;
  };
  route: { due: number; scheduled: number; inFlight: number; oldestDueAt: Date | null };
  webhooks: { active: number; paused: number; disabled: number };
  breakers: { open: number; halfOpen: number };
  recoveries: { pending: number; running: number };
  poisonMessages: number;
  /** Workers whose heartbeat is fresher than the lease, and what they report in flight. */
  workers: { live: number; inFlight: number };
}

/**
 * When the oldest dispatch that should be moving fell due: open, due, held
 * by no lease, of an active webhook whose circuit breaker is not open. Rows
 * a cap or a rate limit holds back count (they are late); paused webhooks',
 * open breakers' and endpoints' yet to consent do not (they wait on purpose). One probe of the open
 * rows' index per active webhook, so it costs the same whatever the backlog.
 */
const OLDEST_DUE = sql`
  select min(x.next_attempt_at) from webhook w
  cross join lateral (
    select o.next_attempt_at from webhook_dispatch_open o
    where o.webhook_id = w.id and o.next_attempt_at <= now()
      and (o.locked_until is null or o.locked_until <= now())
    order by o.next_attempt_at limit 1
  ) x
  where w.status = 'active' and w.consent_state is distinct from 'pending'
    and (w.breaker_open_until is null or w.breaker_open_until <= now())`;

/**
 * Reads the whole snapshot in one statement (a scan of the open dispatches,
 * the webhooks and the small tables), bounded by `boundedRead`. A worker is
 * live while its heartbeat is younger than `liveWithinMs`.
 */
export async function readLaneSnapshot(database: Database, options: { liveWithinMs: number }): Promise<LaneSnapshot> {
  const [row] = await boundedRead<Record<string, number | string | Date | null>>(
    database,
    sql`
    select now() as at, d.*, rj.*, wh.*, rc.*, wk.*,
      (select count(*) from webhook_poison_message) as poison,
      (${OLDEST_DUE}) as oldest_due
    from (
      select count(*) filter (where d.status = 'pending') as pending,
        count(*) filter (where d.status = 'error') as error,
        count(*) filter (where o.next_attempt_at <= now() and (o.locked_until is null or o.locked_until <= now())) as due,
        count(*) filter (where o.locked_until > now()) as in_flight,
        count(*) filter (where w.status <> 'active') as held_inactive,
        count(*) filter (where w.status = 'active' and w.breaker_open_until > now()) as held_breaker,
        count(*) filter (where w.status = 'active' and w.consent_state = 'pending') as held_consent
      from webhook_dispatch_open o join webhook_dispatch d on d.id = o.dispatch_id join webhook w on w.id = o.webhook_id
    ) d,
    (
      select count(*) filter (where run_at <= now() and (locked_until is null or locked_until <= now())) as route_due,
        count(*) filter (where run_at > now() and (locked_until is null or locked_until <= now())) as route_scheduled,
        count(*) filter (where locked_until > now()) as route_in_flight,
        min(run_at) filter (where run_at <= now() and (locked_until is null or locked_until <= now())) as route_oldest
      from webhook_route_job
    ) rj,
    (
      select count(*) filter (where status = 'active') as active,
        count(*) filter (where status = 'paused') as paused,
        count(*) filter (where status = 'disabled') as disabled,
        count(*) filter (where breaker_open_until > now()) as breakers_open,
        count(*) filter (where breaker_open_until <= now()) as breakers_half_open
      from webhook where deleted_at is null
    ) wh,
    (
      select count(*) filter (where status = 'pending') as recoveries_pending,
        count(*) filter (where status = 'running') as recoveries_running
      from webhook_recovery where status <> 'completed'
    ) rc,
    (
      select count(*) as workers_live, coalesce(sum(in_flight), 0) as workers_in_flight
      from webhook_worker where heartbeat_at > now() - ${options.liveWithinMs} * interval '1 millisecond'
    ) wk
  `,
  );
  const n = (key: string) => Number(row![key] ?? 0);
  const date = (key: string) => (row![key] === null ? null : new Date(row![key] as string | Date));
  return {
    at: date("at")!,
    deliver: {
      pending: n("pending"),
      error: n("error"),
      due: n("due"),
      inFlight: n("in_flight"),
      heldInactive: n("held_inactive"),
      heldBreaker: n("held_breaker"),
      heldConsent: n("held_consent"),
      oldestDueAt: date("oldest_due"),
    },
    route: {
      due: n("route_due"),
      scheduled: n("route_scheduled"),
      inFlight: n("route_in_flight"),
      oldestDueAt: date("route_oldest"),
    },
    webhooks: { active: n("active"), paused: n("paused"), disabled: n("disabled") },
    breakers: { open: n("breakers_open"), halfOpen: n("breakers_half_open") },
    recoveries: { pending: n("recoveries_pending"), running: n("recoveries_running") },
    poisonMessages: n("poison"),
    workers: { live: n("workers_live"), inFlight: n("workers_in_flight") },
  };
}

/**
 * The readiness probe's read, cheaper than a snapshot: when the oldest
 * dispatch that should be moving fell due (see OLDEST_DUE), the latest
 * migration applied, and the database's clock.
 */
export async function readReadinessFacts(
  database: Database,
): Promise<{ at: Date; oldestDueAt: Date | null; lastMigrationAt: number | null }> {
  const [row] = await boundedRead<{ at: Date | string; oldest_due: Date | string | null; migrated: string | null }>(
    database,
    sql`
    select now() as at, (${OLDEST_DUE}) as oldest_due,
      (select max(created_at)::text from drizzle.__drizzle_migrations) as migrated
  `,
  );
  return {
    at: new Date(row!.at),
    oldestDueAt: row!.oldest_due === null ? null : new Date(row!.oldest_due),
    lastMigrationAt: row!.migrated === null ? null : Number(row!.migrated),
  };
}
