import { sql } from "drizzle-orm";
import type { Database } from "../client.ts";

/** What the ledger holds on one webhook's deliveries, read without scanning the attempt log. */
export interface EndpointHealthRows {
  /** The database's clock, and the start of the window the hours cover. */
  now: Date;
  since: Date;
  /** Attempts and successes since `since`, per duration bucket (LATENCY_BUCKETS). */
  buckets: { bucket: number; attempts: number; succeeded: number }[];
  /** `webhook_health`: undefined before the first attempt. */
  state:
    | {
        failuresInARow: number;
        lastAttemptAt: Date;
        lastSuccessAt: Date | null;
        lastFailureAt: Date | null;
        lastError: string | null;
        lastStatusCode: number | null;
      }
    | undefined;
  /** Open dispatches (from the due index): waiting, failing and held by a lease now. */
  pending: number;
  error: number;
  inFlight: number;
  /** The earliest open dispatch no lease holds: when the next attempt is due. */
  nextDueAt: Date | null;
}

/**
 * Reads a webhook's delivery health: its hourly rollups since the start of
 * the hour 24 hours ago, summed per duration bucket; its state row; and its
 * open dispatches counted on the due index. Two statements, each bounded by
 * the webhook's own rows.
 */
export async function readEndpointHealth(database: Database, webhookId: string): Promise<EndpointHealthRows> {
  const [head] = await database.rows<{
    now: Date | string;
    since: Date | string;
    failures_in_a_row: number | null;
    last_attempt_at: Date | string | null;
    last_success_at: Date | string | null;
    last_failure_at: Date | string | null;
    last_error: string | null;
    last_status_code: number | null;
    pending: number | string;
    error: number | string;
    in_flight: number | string;
    next_due_at: Date | string | null;
  }>(sql`
    select now() as now, date_trunc('hour', now() - interval '24 hours', 'UTC') as since,
      h.failures_in_a_row, h.last_attempt_at, h.last_success_at, h.last_failure_at, h.last_error, h.last_status_code,
      b.pending, b.error, b.in_flight, b.next_due_at
    from (select 1) one
    left join webhook_health h on h.webhook_id = ${webhookId}
    cross join lateral (
      select count(*) filter (where d.status = 'pending') as pending,
        count(*) filter (where d.status = 'error') as error,
        count(*) filter (where o.locked_until > now()) as in_flight,
        min(o.next_attempt_at) filter (where o.locked_until is null or o.locked_until <= now()) as next_due_at
      from webhook_dispatch_open o join webhook_dispatch d on d.id = o.dispatch_id
      where o.webhook_id = ${webhookId}
    ) b
  `);
  const row = head!;
  const since = new Date(row.since);
  const buckets = await database.rows<{ bucket: number; attempts: number | string; succeeded: number | string }>(sql`
    select bucket, sum(attempts) as attempts, sum(succeeded) as succeeded from webhook_health_hour
    where webhook_id = ${webhookId} and hour >= ${since.toISOString()}::timestamptz
    group by bucket
  `);
  const date = (value: Date | string | null) => (value === null ? null : new Date(value));
  return {
    now: new Date(row.now),
    since,
    buckets: buckets.map((b) => ({ bucket: b.bucket, attempts: Number(b.attempts), succeeded: Number(b.succeeded) })),
    state:
      row.last_attempt_at === null
        ? undefined
        : {
            failuresInARow: row.failures_in_a_row ?? 0,
            lastAttemptAt: new Date(row.last_attempt_at),
            lastSuccessAt: date(row.last_success_at),
            lastFailureAt: date(row.last_failure_at),
            lastError: row.last_error,
            lastStatusCode: row.last_status_code,
          },
    pending: Number(row.pending),
    error: Number(row.error),
    inFlight: Number(row.in_flight),
    nextDueAt: date(row.next_due_at),
  };
}
