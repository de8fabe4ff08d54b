import { sql, type SQL } from "drizzle-orm";
import type { Database } from "../../../db/client.ts";
import { forgetInFlight } from "../../../db/sql/claim-dispatches.ts";
import type { Logger } from "../../../log/logger.ts";

export interface LeaseKeeper {
  /** Renews now (tests), resolving when done. */
  renew(): Promise<void>;
  /** Stops renewing and forgets this worker (its leases are released by the loops as they finish). */
  stop(): Promise<void>;
}

/** What a worker's loops are working on right now: the leases worth keeping. */
export interface HeldLeases {
  dispatches: readonly string[];
  routeJobs: readonly number[];
}

/**
 * Keeps a worker's leases short and alive: every `everyMs` it extends the
 * leases on the dispatches and route jobs its loop says it holds, and its
 * row of the in-flight book (`webhook_lane_in_flight`) with them, and beats
 * its heartbeat in `webhook_worker`. A worker that dies stops renewing, so
 * its work is claimable again within one lease, not after the longest
 * delivery could take. Only what the loops hold is renewed, never every row
 * stamped with this worker's id: a claim whose answer was lost, or a job
 * whose step failed while the database was away, is stamped but abandoned,
 * and must run out like a dead worker's.
 */
export function startLeaseKeeper(options: {
  database: Database;
  logger: Logger;
  workerId: string;
  dispatchLeaseMs: number;
  routeLeaseMs: number;
  everyMs: number;
  held: () => HeldLeases;
  inFlight: () => number;
  lastClaimAt: () => Date | undefined;
}): LeaseKeeper {
  const { database, workerId } = options;
  let running = true;
  let timer: NodeJS.Timeout | undefined;
  let current: Promise<void> | undefined;

  async function renew(): Promise<void> {
    const lastClaim = options.lastClaimAt()?.toISOString() ?? null;
    const held = options.held();
    // This worker's row of the in-flight book counts as long as its leases hold. A transaction of its own: the
    // claims write that row too, and must not wait behind the leases below. Like the lane's own statements, a
    // renewal need not wait for the disk: lost in a crash, it is a lease that runs out, and at-least-once allows it.
    await unflushed(sql`
      update webhook_lane_in_flight
      set until = greatest(until, now() + ${options.dispatchLeaseMs} * interval '1 millisecond')
      where worker = ${workerId}
    `);
    // Rows another statement holds right now are skipped, never waited for: the record statement releases the
    // leases it writes, and waiting for its row locks while holding others it wants deadlocked the two (a
    // second's stall, PostgreSQL's deadlock_timeout, and a record thrown away to be sent again).
    await unflushed(sql`
      with held_dispatches as materialized (
        select o.dispatch_id from webhook_dispatch_open o
        where o.dispatch_id in (select jsonb_array_elements_text(${JSON.stringify(held.dispatches)}::jsonb))
          and o.locked_by = ${workerId} and o.locked_until is not null
        for update skip locked
      ),
      dispatches as (
        update webhook_dispatch_open o
        set locked_until = now() + ${options.dispatchLeaseMs} * interval '1 millisecond'
        from held_dispatches h where o.dispatch_id = h.dispatch_id
        returning 1
      ),
      held_jobs as materialized (
        select r.id from webhook_route_job r
        where r.id in (select jsonb_array_elements_text(${JSON.stringify(held.routeJobs)}::jsonb)::bigint)
          and r.locked_by = ${workerId} and r.locked_until is not null
        for update skip locked
      ),
      jobs as (
        update webhook_route_job r
        set locked_until = now() + ${options.routeLeaseMs} * interval '1 millisecond'
        from held_jobs h where r.id = h.id
        returning 1
      )
      insert into webhook_worker (id, heartbeat_at, in_flight, last_claim_at)
      values (${workerId}, now(), ${options.inFlight()}, ${lastClaim}::timestamptz)
      on conflict (id) do update
      set heartbeat_at = now(), in_flight = excluded.in_flight, last_claim_at = excluded.last_claim_at
    `);
  }

  /** Runs `query` in a transaction that commits without waiting for the WAL flush (both sent in one write). */
  function unflushed(query: SQL): Promise<unknown> {
    return database.transaction((tx) =>
      Promise.all([tx.rows(sql`set local synchronous_commit = off`), tx.rows(query)]),
    );
  }

  const tick = () => {
    timer = undefined;
    if (!running) return;
    current = renew()
      .catch((error: unknown) => {
        if (!database.outage.report(error)) options.logger.warn({ err: error }, "lease renewal failed");
      })
      .finally(() => {
        current = undefined;
        if (running) timer = setTimeout(tick, options.everyMs);
      });
  };
  tick();

  return {
    renew,
    async stop() {
      running = false;
      clearTimeout(timer);
      await current;
      await database.rows(sql`delete from webhook_worker where id = ${workerId}`).catch(() => {});
      // Its attempts are over (the loops drained first): nothing of this worker is in flight.
      await forgetInFlight(database, workerId).catch(() => {});
    },
  };
}
