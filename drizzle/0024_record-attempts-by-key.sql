-- The record statement reaches every row by its key, whatever the table's statistics say.
--
-- It was one named statement, and PostgreSQL kept the generic plan it made on the sixth batch. A worker that
-- started while the ledger was small kept a plan that joined the batch to webhook_dispatch by hashing a scan of the
-- whole table -- twice, for the dispatches and for their attempts -- and went on doing so as the table grew, until an
-- ANALYZE invalidated it: `auto_explain` on `npm run bench -- --only end-to-end` showed "Seq Scan on
-- webhook_dispatch ... Rows Removed by Filter: 5710" under both joins, 2,087 buffers read per batch of about nine,
-- and a batch cost more the longer the worker ran. The webhook table was scanned the same way for the breakers.
--
-- The statement now runs in a function with sequential scans and merge joins off, and reaches webhook_dispatch and
-- webhook only through their primary keys: the rows it changes through the batch's ids and webhook ids (index
-- conditions, so no plan walks a whole index either), each attempt's run by its dispatch's id. PL/pgSQL keeps that
-- plan for the session, and it stays right however the tables grow. Hash joins stay on for joining the batch's own
-- rows to each other: with nested loops only, a batch of 200 compared every row with every other (in `node
-- bench/claim-record-loop.ts --limit 200` the record took 161 µs a delivery where the statement before took 83 µs;
-- with hash joins, 66-68 µs against 61 µs). What it writes is unchanged. Routing and recording 6,000 events of one
-- webhook ten at a time on a table that starts empty (`node bench/route-record-loop.ts`, three alternating runs),
-- the record took 196-369 µs an event before and 110-116 µs after; in test/integration/record-plan.test.ts a batch
-- of ten read 40,284 rows by scanning before and none after.
--
-- The duration bucket of webhook_health_hour is a function of its own, so that code and tests share this
-- arithmetic with the statement: bucket 0 under 1 ms, bucket i for [1.15^(i-1), 1.15^i) ms, the last (79) for
-- everything from 1.15^78 ms on (LATENCY_BUCKETS in lib/db/sql/latency-histogram.ts; the divisor is ln 1.15 as
-- JavaScript's Math.log gives it).
CREATE FUNCTION hooklane_latency_bucket(p_ms integer) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
  SELECT CASE WHEN p_ms < 1 THEN 0 ELSE least(79, floor(ln(p_ms::float8) / 0.13976194237515863::float8)::int + 1) END
$$;
--> statement-breakpoint
CREATE FUNCTION hooklane_record_attempts(
  p_worker text,
  p_records jsonb,
  p_threshold integer,
  p_open_base_ms float8,
  p_open_max_ms float8,
  p_connection_classes text[]
) RETURNS TABLE (webhook_id text, failures integer, open_for_ms float8)
LANGUAGE plpgsql
SET enable_seqscan = off
SET enable_mergejoin = off
AS $$
#variable_conflict use_column
DECLARE
  v_ids text[] := ARRAY(SELECT r.id FROM jsonb_to_recordset(p_records) AS r(id text));
  v_hooks text[] := ARRAY(SELECT DISTINCT r.webhook_id FROM jsonb_to_recordset(p_records) AS r(webhook_id text));
BEGIN
  RETURN QUERY
  -- Each attempt with its dispatch's current run (none: the dispatch was deleted).
  WITH r AS (
    SELECT r.*, CASE WHEN r.retry_in_ms IS NULL THEN NULL
                     ELSE now() + r.retry_in_ms * interval '1 millisecond' END AS next_at,
      (SELECT d.run FROM webhook_dispatch d WHERE d.id = r.id) AS run
    FROM jsonb_to_recordset(p_records) AS r(
      id text, webhook_id text, attempt int, status text, retry_in_ms bigint, started_at timestamptz,
      duration_ms int, outcome text, status_code int, error_class text, error_message text,
      response_excerpt text, signature jsonb, probe boolean)
  ),
  completed AS (
    UPDATE webhook_dispatch d
    SET status = r.status,
        attempt_count = r.attempt,
        next_attempt_at = coalesce(r.next_at, d.next_attempt_at),
        locked_until = NULL,
        locked_by = NULL,
        last_status_code = r.status_code,
        last_error = CASE WHEN r.outcome = 'success' THEN NULL
                          ELSE concat_ws(': ', r.error_class, r.error_message) END,
        updated_at = now(),
        completed_at = CASE WHEN r.status IN ('success', 'exhausted') THEN now() END
    FROM r
    -- The batch's rows by their ids; the join to r only pairs them up.
    WHERE d.id = ANY (v_ids) AND d.id = r.id AND d.locked_by = p_worker
    RETURNING d.id, d.webhook_id, d.status, d.event_id, d.event_type, d.resource_id, d.attempt_count, d.last_error
  ),
  -- The owner hears of a dispatch that failed for good: written with its last attempt, so it cannot be lost;
  -- the sweeper folds these into one digest per webhook and window and mails it.
  exhausted_notes AS (
    INSERT INTO webhook_notification (webhook_id, account, kind, detail, mail_status)
    SELECT c.webhook_id, w.account, 'dispatch.exhausted',
      jsonb_build_object('dispatchId', c.id, 'eventId', c.event_id, 'eventType', c.event_type,
        'resourceId', c.resource_id, 'attempts', c.attempt_count, 'lastError', c.last_error),
      'digest'
    FROM completed c JOIN webhook w ON w.id = c.webhook_id
    WHERE w.id = ANY (v_hooks) AND c.status = 'exhausted'
  ),
  -- The attempt belongs to the dispatch's current run; a dispatch deleted meanwhile (its webhook was) leaves
  -- nothing to record. An attempt recorded already (a lease that ran out) is not recorded twice.
  attempts AS (
    INSERT INTO webhook_attempt (dispatch_id, run, attempt, started_at, duration_ms, outcome, status_code,
      error_class, error_message, response_excerpt, signature, worker, next_attempt_at)
    SELECT r.id, r.run, r.attempt, r.started_at, r.duration_ms, r.outcome, r.status_code,
      r.error_class, r.error_message, r.response_excerpt, r.signature, p_worker, r.next_at
    FROM r
    WHERE r.run IS NOT NULL
    ON CONFLICT (dispatch_id, run, attempt) DO NOTHING
    RETURNING dispatch_id, started_at, duration_ms, outcome, status_code, error_class, error_message
  ),
  -- Endpoint health, kept here so that reading it never scans the attempt log. Only attempts this statement
  -- inserted count. Rows are upserted in key order, so workers recording the same webhooks at once queue up
  -- instead of deadlocking.
  recorded AS (
    SELECT w.webhook_id, a.*,
      max(a.started_at) FILTER (WHERE a.outcome = 'success') OVER (PARTITION BY w.webhook_id) AS last_success
    FROM attempts a JOIN (SELECT DISTINCT id, webhook_id FROM r) w ON w.id = a.dispatch_id
  ),
  -- The webhook's state now: failures since its last success, its last answer and last error.
  health AS (
    INSERT INTO webhook_health AS h (webhook_id, failures_in_a_row, last_attempt_at, last_success_at,
      last_failure_at, last_error, last_status_code)
    SELECT webhook_id,
      count(*) FILTER (WHERE outcome <> 'success' AND started_at > coalesce(last_success, '-infinity')),
      max(started_at), max(last_success), max(started_at) FILTER (WHERE outcome <> 'success'),
      (array_agg(concat_ws(': ', error_class, error_message) ORDER BY started_at DESC)
        FILTER (WHERE outcome <> 'success'))[1],
      (array_agg(status_code ORDER BY started_at DESC))[1]
    FROM recorded GROUP BY webhook_id ORDER BY webhook_id
    ON CONFLICT (webhook_id) DO UPDATE
    SET failures_in_a_row = CASE WHEN excluded.last_success_at IS NULL
                                 THEN h.failures_in_a_row + excluded.failures_in_a_row
                                 ELSE excluded.failures_in_a_row END,
        last_attempt_at = greatest(h.last_attempt_at, excluded.last_attempt_at),
        last_success_at = greatest(h.last_success_at, excluded.last_success_at),
        last_failure_at = greatest(h.last_failure_at, excluded.last_failure_at),
        last_error = CASE WHEN excluded.last_failure_at >= h.last_failure_at OR h.last_failure_at IS NULL
                          THEN coalesce(excluded.last_error, h.last_error) ELSE h.last_error END,
        last_status_code = CASE WHEN excluded.last_attempt_at >= h.last_attempt_at
                                THEN excluded.last_status_code ELSE h.last_status_code END
  ),
  -- Per webhook, hour (UTC, by start) and duration bucket: attempts and successes.
  health_hours AS (
    INSERT INTO webhook_health_hour AS hh (webhook_id, hour, bucket, attempts, succeeded)
    SELECT webhook_id, date_trunc('hour', started_at, 'UTC'), hooklane_latency_bucket(duration_ms),
      count(*), count(*) FILTER (WHERE outcome = 'success')
    FROM recorded
    GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
    ON CONFLICT (webhook_id, hour, bucket) DO UPDATE
    SET attempts = hh.attempts + excluded.attempts,
        succeeded = hh.succeeded + excluded.succeeded
  ),
  -- The lane's throughput, minute by minute (by recording time).
  lane_minute AS (
    INSERT INTO webhook_lane_minute AS m (minute, attempts, succeeded)
    SELECT date_trunc('minute', now()), count(*), count(*) FILTER (WHERE outcome = 'success')
    FROM recorded HAVING count(*) > 0
    ON CONFLICT (minute) DO UPDATE
    SET attempts = m.attempts + excluded.attempts, succeeded = m.succeeded + excluded.succeeded
  ),
  -- Per webhook: did the endpoint answer at all, and how many connection-level failures.
  outcomes AS (
    SELECT r.webhook_id, bool_or(r.status_code IS NOT NULL) AS reachable, bool_or(r.probe) AS probed,
      count(*) FILTER (WHERE r.error_class = ANY (p_connection_classes)) AS failures
    FROM r GROUP BY r.webhook_id
  ),
  -- The webhooks whose breaker changes, locked in id order (as the claim locks them) and read as they are now:
  -- another worker recording the same endpoint's failures at once counts on top of this one, not beside it. No
  -- key update, as the update's own lock: inserts referencing the webhook (health rows, dispatches) go on.
  changing AS (
    SELECT w.id, w.breaker_failures, w.breaker_opens, w.breaker_open_until
    FROM webhook w JOIN outcomes o ON o.webhook_id = w.id
    WHERE w.id = ANY (v_hooks)
      AND ((o.reachable AND (w.breaker_failures > 0 OR w.breaker_opens > 0 OR w.breaker_open_until IS NOT NULL))
        OR (NOT o.reachable AND o.failures > 0))
    ORDER BY w.id
    FOR NO KEY UPDATE OF w
  ),
  judged AS (
    SELECT o.webhook_id, o.reachable, (w.breaker_failures + o.failures)::int AS failures, w.breaker_opens AS opens,
      NOT o.reachable AND w.breaker_failures + o.failures >= p_threshold
        AND (o.probed OR w.breaker_open_until IS NULL OR w.breaker_open_until <= now()) AS opening
    FROM outcomes o JOIN changing w ON w.id = o.webhook_id
  ),
  -- Any HTTP answer closes the breaker; at the threshold it opens for a backoff that doubles with each
  -- consecutive opening, up to the cap.
  breaker AS (
    UPDATE webhook w
    SET breaker_failures = CASE WHEN j.reachable THEN 0 ELSE j.failures END,
        breaker_opens = CASE WHEN j.reachable THEN 0 WHEN j.opening THEN j.opens + 1 ELSE w.breaker_opens END,
        breaker_open_until = CASE
          WHEN j.reachable THEN NULL
          WHEN j.opening THEN now() + least(p_open_max_ms, p_open_base_ms * 2 ^ j.opens) * interval '1 millisecond'
          ELSE w.breaker_open_until END
    FROM judged j
    WHERE w.id = ANY (v_hooks) AND w.id = j.webhook_id
  )
  SELECT j.webhook_id, j.failures, least(p_open_max_ms, p_open_base_ms * 2 ^ j.opens)
  FROM judged j WHERE j.opening;
END;
$$;
