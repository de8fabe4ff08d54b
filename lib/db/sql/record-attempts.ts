import { sql } from "drizzle-orm";
import type { Database } from "../client.ts";
import { safeText } from "../safe-text.ts";
import { latencyBucketSql } from "./latency-histogram.ts";
import type { AttemptOutcome, DispatchStatus, SignatureManifest } from "../schema.ts";

/** What one attempt did, and what the dispatch becomes. */
export interface AttemptRecord {
  dispatchId: string;
  webhookId: string;
  attempt: number;
  status: DispatchStatus;
  /** For `error`: the delay before the next attempt, counted from when this is recorded. */
  retryInMs: number | null;
  startedAt: Date;
  durationMs: number;
  outcome: AttemptOutcome;
  statusCode: number | null;
  errorClass: string | null;
  errorMessage: string | null;
  responseExcerpt: string | null;
  signature: SignatureManifest;
  /** This attempt was a half-open circuit breaker's probe. */
  probe: boolean;
}

/** How the circuit breaker is judged, from `BREAKER`. */
export interface BreakerRule {
  threshold: number;
  openBaseMs: number;
  openMaxMs: number;
  connectionClasses: readonly string[];
}

/** A breaker this batch opened (or re-opened after a failed probe). */
export interface OpenedBreaker {
  webhookId: string;
  failures: number;
  openForMs: number;
}

/**
 * Records a batch of attempts and completes their dispatches in one
 * statement, releasing the leases `workerId` held, keeps each webhook's
 * health (`webhook_health`, `webhook_health_hour`) and the lane's throughput
 * (`webhook_lane_minute`), and updates each webhook's circuit breaker: any HTTP answer closes it; connection-level
 * failures count, and at the threshold it opens for a backoff that doubles
 * with each consecutive opening. The next attempt's time is computed from the
 * database clock at recording time, so a retry can come later than planned
 * but never earlier. A dispatch exhausted here gets its owner's
 * `dispatch.exhausted` notification in the same statement. Text from outside
 * is made safe for PostgreSQL first.
 */
export async function recordAttempts(
  database: Database,
  workerId: string,
  records: readonly AttemptRecord[],
  breaker: BreakerRule,
): Promise<OpenedBreaker[]> {
  if (records.length === 0) return [];
  const json = JSON.stringify(
    records.map((r) => ({
      id: r.dispatchId,
      webhook_id: r.webhookId,
      attempt: r.attempt,
      status: r.status,
      retry_in_ms: r.retryInMs,
      started_at: r.startedAt.toISOString(),
      duration_ms: r.durationMs,
      outcome: r.outcome,
      status_code: r.statusCode,
      error_class: r.errorClass,
      error_message: safeText(r.errorMessage),
      response_excerpt: safeText(r.responseExcerpt),
      signature: r.signature,
      probe: r.probe,
    })),
  );
  const connectionClasses = JSON.stringify(breaker.connectionClasses);
  // Doubles with each consecutive opening (j.opens), up to the cap.
  const openFor = sql`least(${breaker.openMaxMs}::float8, ${breaker.openBaseMs}::float8 * 2 ^ j.opens)`;
  return (
    await database.rows<{ webhook_id: string; failures: number; open_for_ms: number | string }>(
      sql`
    with r as (
      select r.*, case when r.retry_in_ms is null then null
                       else now() + r.retry_in_ms * interval '1 millisecond' end as next_at
      from jsonb_to_recordset(${json}::jsonb) as r(
        id text, webhook_id text, attempt int, status text, retry_in_ms bigint, started_at timestamptz,
        duration_ms int, outcome text, status_code int, error_class text, error_message text,
        response_excerpt text, signature jsonb, probe boolean)
    ),
    completed as (
      update webhook_dispatch d
      set status = r.status,
          attempt_count = r.attempt,
          next_attempt_at = coalesce(r.next_at, d.next_attempt_at),
          locked_until = null,
          locked_by = null,
          last_status_code = r.status_code,
          last_error = case when r.outcome = 'success' then null
                            else concat_ws(': ', r.error_class, r.error_message) end,
          updated_at = now(),
          completed_at = case when r.status in ('success', 'exhausted') then now() end
      from r
      where d.id = r.id and d.locked_by = ${workerId}
      returning d.id, d.webhook_id, d.status, d.event_id, d.event_type, d.resource_id, d.attempt_count, d.last_error
    ),
    -- The owner hears of a dispatch that failed for good: written with its last attempt, so it cannot be lost;
    -- the sweeper folds these into one digest per webhook and window and mails it.
    exhausted_notes as (
      insert into webhook_notification (webhook_id, account, kind, detail, mail_status)
      select c.webhook_id, w.account, 'dispatch.exhausted',
        jsonb_build_object('dispatchId', c.id, 'eventId', c.event_id, 'eventType', c.event_type,
          'resourceId', c.resource_id, 'attempts', c.attempt_count, 'lastError', c.last_error),
        'digest'
      from completed c join webhook w on w.id = c.webhook_id
      where c.status = 'exhausted'
    ),
    -- The attempt belongs to the dispatch's current run; a dispatch deleted
    -- meanwhile (its webhook was) leaves nothing to record.
    attempts as (
      insert into webhook_attempt (dispatch_id, run, attempt, started_at, duration_ms, outcome, status_code,
        error_class, error_message, response_excerpt, signature, worker, next_attempt_at)
      select r.id, d.run, r.attempt, r.started_at, r.duration_ms, r.outcome, r.status_code,
        r.error_class, r.error_message, r.response_excerpt, r.signature, ${workerId}, r.next_at
      from r join webhook_dispatch d on d.id = r.id
      on conflict (dispatch_id, run, attempt) do nothing
      returning dispatch_id, started_at, duration_ms, outcome, status_code, error_class, error_message
    ),
    -- Endpoint health, kept here so that reading it never scans the attempt log. Only attempts this
    -- statement inserted count (a duplicate refused above counts once). Rows are upserted in key
    -- order, so workers recording the same webhooks at once queue up instead of deadlocking.
    recorded as (
      select w.webhook_id, a.*,
        max(a.started_at) filter (where a.outcome = 'success') over (partition by w.webhook_id) as last_success
      from attempts a join (select distinct id, webhook_id from r) w on w.id = a.dispatch_id
    ),
    -- The webhook's state now: failures since its last success, its last answer and last error.
    health as (
      insert into webhook_health as h (webhook_id, failures_in_a_row, last_attempt_at, last_success_at,
        last_failure_at, last_error, last_status_code)
      select webhook_id,
        count(*) filter (where outcome <> 'success' and started_at > coalesce(last_success, '-infinity')),
        max(started_at), max(last_success), max(started_at) filter (where outcome <> 'success'),
        (array_agg(concat_ws(': ', error_class, error_message) order by started_at desc)
          filter (where outcome <> 'success'))[1],
        (array_agg(status_code order by started_at desc))[1]
      from recorded group by webhook_id order by webhook_id
      on conflict (webhook_id) do update
      set failures_in_a_row = case when excluded.last_success_at is null
                                   then h.failures_in_a_row + excluded.failures_in_a_row
                                   else excluded.failures_in_a_row end,
          last_attempt_at = greatest(h.last_attempt_at, excluded.last_attempt_at),
          last_success_at = greatest(h.last_success_at, excluded.last_success_at),
          last_failure_at = greatest(h.last_failure_at, excluded.last_failure_at),
          last_error = case when excluded.last_failure_at >= h.last_failure_at or h.last_failure_at is null
                            then coalesce(excluded.last_error, h.last_error) else h.last_error end,
          last_status_code = case when excluded.last_attempt_at >= h.last_attempt_at
                                  then excluded.last_status_code else h.last_status_code end
    ),
    -- Per webhook, hour (UTC, by start) and duration bucket (LATENCY_BUCKETS): attempts and successes.
    health_hours as (
      insert into webhook_health_hour as hh (webhook_id, hour, bucket, attempts, succeeded)
      select webhook_id, date_trunc('hour', started_at, 'UTC'), ${latencyBucketSql(sql`duration_ms`)},
        count(*), count(*) filter (where outcome = 'success')
      from recorded
      group by 1, 2, 3 order by 1, 2, 3
      on conflict (webhook_id, hour, bucket) do update
      set attempts = hh.attempts + excluded.attempts,
          succeeded = hh.succeeded + excluded.succeeded
    ),
    -- The lane's throughput, minute by minute (by recording time).
    lane_minute as (
      insert into webhook_lane_minute as m (minute, attempts, succeeded)
      select date_trunc('minute', now()), count(*), count(*) filter (where outcome = 'success')
      from recorded having count(*) > 0
      on conflict (minute) do update
      set attempts = m.attempts + excluded.attempts, succeeded = m.succeeded + excluded.succeeded
    ),
    -- Per webhook: did the endpoint answer at all, and how many connection-level failures.
    outcomes as (
      select r.webhook_id, bool_or(r.status_code is not null) as reachable, bool_or(r.probe) as probed,
        count(*) filter (where r.error_class in (select jsonb_array_elements_text(${connectionClasses}::jsonb)))
          as failures
      from r group by r.webhook_id
    ),
    -- The webhooks whose breaker changes, locked in id order (as the claim locks them) and read as they are
    -- now: another worker recording the same endpoint's failures at once counts on top of this one, not beside it.
    -- No key update, as the update's own lock: inserts referencing the webhook (health rows, dispatches) go on.
    changing as (
      select w.id, w.breaker_failures, w.breaker_opens, w.breaker_open_until
      from webhook w join outcomes o on o.webhook_id = w.id
      where (o.reachable and (w.breaker_failures > 0 or w.breaker_opens > 0 or w.breaker_open_until is not null))
        or (not o.reachable and o.failures > 0)
      order by w.id
      for no key update of w
    ),
    judged as (
      select o.webhook_id, o.reachable, w.breaker_failures + o.failures as failures, w.breaker_opens as opens,
        not o.reachable and w.breaker_failures + o.failures >= ${breaker.threshold}
          and (o.probed or w.breaker_open_until is null or w.breaker_open_until <= now()) as opening
      from outcomes o join changing w on w.id = o.webhook_id
    ),
    breaker as (
      update webhook w
      set breaker_failures = case when j.reachable then 0 else j.failures end,
          breaker_opens = case when j.reachable then 0 when j.opening then j.opens + 1 else w.breaker_opens end,
          breaker_open_until = case
            when j.reachable then null
            when j.opening then now() + ${openFor} * interval '1 millisecond'
            else w.breaker_open_until end
      from judged j
      where w.id = j.webhook_id
    )
    select j.webhook_id, j.failures, ${openFor} as open_for_ms from judged j where j.opening
  `,
      // The same text every call (every value is a parameter): parsed once per connection, not per batch.
      "hooklane_record_attempts",
    )
  ).map((row) => ({ webhookId: row.webhook_id, failures: row.failures, openForMs: Number(row.open_for_ms) }));
}
