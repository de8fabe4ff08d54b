-- hooklane_record_attempts: records a batch of finished attempts and what each means for its dispatch, its
-- webhook's health and circuit breaker, in one statement.
--
-- Called by: recordAttempts (lib/db/sql/record-attempts.ts), for every transport and for listen sessions.
--
-- Locks: the open rows p_worker still leases (deleted or updated), then their ledger rows (updated); the ledger
-- rows of attempts whose lease ran out, FOR KEY SHARE (so none is deleted before its attempt is in); the health
-- rollup rows, upserted in key order; the webhooks whose breaker changes, FOR NO KEY UPDATE in id order (as the
-- claim locks them).
--
-- Steps:
--   1. Each record's open row, if p_worker still leases it: a finished dispatch (success, exhausted) leaves the
--      open set; a retry (error) stays in it, unleased, due at the retry's time by this statement's clock, so a
--      retry can only come later than planned. An ordered row (order_key) notes when it first failed
--      (failing_since): the time it may hold its resource's later events back counts from there.
--   2. The ledger row of each of those: status, attempt count, next attempt, last answer. No index reads these
--      columns, so the update is heap-only where its page has room.
--   3. Exhausted dispatches' owner notifications (the sweeper folds them into digests); none for a test event.
--   4. The attempts, of the dispatch's current run, for the rows updated in 2 or still there (a lease that ran
--      out: the attempt was made, and is recorded once).
--   5. Endpoint health from the attempts inserted: the webhook's state now, per hour and duration bucket, and the
--      lane's attempts per minute (in one of sixteen rows a minute, by worker).
--   6. Circuit breakers: any HTTP answer closes one; connection-level failures (p_connection_classes) count, and
--      at p_threshold it opens for a backoff that doubles with each consecutive opening, up to p_open_max_ms.
-- A test event's attempt (a record with "test": true) counts toward the lane's throughput only: never toward
-- health (5) or the breaker (6), so rehearsing a rejection leaves the endpoint's standing as it was. A record
-- without the field (a release that did not send it) counts as before.
-- Returns the breakers this batch opened, with the failures counted and how long they stay open.
CREATE OR REPLACE FUNCTION hooklane_record_attempts(
  p_worker text, p_records jsonb, p_threshold integer, p_open_base_ms double precision,
  p_open_max_ms double precision, p_connection_classes text[]
) RETURNS TABLE(webhook_id text, failures integer, open_for_ms double precision)
LANGUAGE plpgsql
SET enable_seqscan = off
SET jit = off
SET enable_mergejoin = off
AS $$
#variable_conflict use_column
DECLARE
  v_ids text[] := ARRAY(SELECT r.id FROM jsonb_to_recordset(p_records) AS r(id text));
  v_hooks text[] := ARRAY(SELECT DISTINCT r.webhook_id FROM jsonb_to_recordset(p_records) AS r(webhook_id text));
BEGIN
  -- Lost in a crash, this transaction's work is done again (at-least-once): no need to wait for the disk.
  PERFORM set_config('synchronous_commit', 'off', true);
  RETURN QUERY
  WITH r AS (
    SELECT r.*, CASE WHEN r.retry_in_ms IS NULL THEN NULL
                     ELSE now() + r.retry_in_ms * interval '1 millisecond' END AS next_at
    FROM jsonb_to_recordset(p_records) AS r(
      id text, webhook_id text, attempt int, status text, retry_in_ms bigint, started_at timestamptz,
      duration_ms int, outcome text, status_code int, error_class text, error_message text,
      response_excerpt text, signature jsonb, probe boolean, test boolean)
  ),
  -- 1. The open rows this worker still holds.
  closed AS (
    DELETE FROM webhook_dispatch_open o USING r
    WHERE o.dispatch_id = ANY (v_ids) AND o.dispatch_id = r.id AND o.locked_by = p_worker AND r.status <> 'error'
    RETURNING o.dispatch_id
  ),
  reopened AS (
    UPDATE webhook_dispatch_open o
    SET next_attempt_at = r.next_at, locked_until = NULL, locked_by = NULL,
        -- An ordered row's first failure starts the time it may hold its resource's later events back.
        failing_since = CASE WHEN o.order_key IS NOT NULL THEN coalesce(o.failing_since, now()) END
    FROM r
    WHERE o.dispatch_id = ANY (v_ids) AND o.dispatch_id = r.id AND o.locked_by = p_worker AND r.status = 'error'
    RETURNING o.dispatch_id
  ),
  -- 2. Their ledger rows.
  completed AS (
    UPDATE webhook_dispatch d
    SET status = r.status,
        attempt_count = r.attempt,
        next_attempt_at = coalesce(r.next_at, d.next_attempt_at),
        last_status_code = r.status_code,
        last_error = CASE WHEN r.outcome = 'success' THEN NULL
                          ELSE concat_ws(': ', r.error_class, r.error_message) END,
        updated_at = now(),
        completed_at = CASE WHEN r.status IN ('success', 'exhausted') THEN now() END
    FROM r
    WHERE d.id = ANY (ARRAY(SELECT c.dispatch_id FROM closed c UNION ALL SELECT o.dispatch_id FROM reopened o))
      AND d.id = r.id
    RETURNING d.id, d.run, d.webhook_id, d.status, d.event_id, d.event_type, d.resource_id, d.attempt_count,
      d.last_error
  ),
  -- The batch's other dispatches (a lease that ran out: another worker may hold the row now), locked as a
  -- foreign key's check would lock them, so that none is deleted before its attempt is in.
  kept AS (
    SELECT d.id, d.run FROM webhook_dispatch d
    WHERE d.id = ANY (v_ids)
      AND d.id <> ALL (ARRAY(SELECT c.dispatch_id FROM closed c UNION ALL SELECT o.dispatch_id FROM reopened o))
    FOR KEY SHARE OF d
  ),
  -- 3. The owner hears of a dispatch that failed for good, written with its last attempt.
  exhausted_notes AS (
    INSERT INTO webhook_notification (webhook_id, account, kind, detail, mail_status)
    SELECT c.webhook_id, w.account, 'dispatch.exhausted',
      jsonb_build_object('dispatchId', c.id, 'eventId', c.event_id, 'eventType', c.event_type,
        'resourceId', c.resource_id, 'attempts', c.attempt_count, 'lastError', c.last_error),
      'digest'
    FROM completed c JOIN webhook w ON w.id = c.webhook_id
    WHERE w.id = ANY (v_hooks) AND c.status = 'exhausted' AND c.event_type <> 'webhook.test'
  ),
  -- 4. The attempts, once each: a dispatch deleted meanwhile (its webhook was) leaves nothing to record.
  attempts AS (
    INSERT INTO webhook_attempt (dispatch_id, run, attempt, started_at, duration_ms, outcome, status_code,
      error_class, error_message, response_excerpt, signature, worker, next_attempt_at)
    SELECT r.id, x.run, r.attempt, r.started_at, r.duration_ms, r.outcome, r.status_code,
      r.error_class, r.error_message, r.response_excerpt, r.signature, p_worker, r.next_at
    FROM r JOIN (SELECT c.id, c.run FROM completed c UNION ALL SELECT k.id, k.run FROM kept k) x ON x.id = r.id
    ON CONFLICT (dispatch_id, run, attempt) DO NOTHING
    RETURNING dispatch_id, started_at, duration_ms, outcome, status_code, error_class, error_message
  ),
  -- 5. Endpoint health, from the attempts inserted. Rows are upserted in key order, so workers recording the same
  -- webhooks at once queue up instead of deadlocking.
  recorded AS (
    SELECT w.webhook_id, a.*,
      max(a.started_at) FILTER (WHERE a.outcome = 'success') OVER (PARTITION BY w.webhook_id) AS last_success
    FROM attempts a JOIN (SELECT DISTINCT id, webhook_id FROM r WHERE r.test IS NOT TRUE) w ON w.id = a.dispatch_id
  ),
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
  -- One of sixteen rows a minute, by worker: workers recording at once do not queue on one row.
  lane_minute AS (
    INSERT INTO webhook_lane_minute AS m (minute, shard, attempts, succeeded)
    SELECT date_trunc('minute', now()), abs(hashtext(p_worker) % 16), count(*),
      count(*) FILTER (WHERE outcome = 'success')
    FROM attempts HAVING count(*) > 0
    ON CONFLICT (minute, shard) DO UPDATE
    SET attempts = m.attempts + excluded.attempts, succeeded = m.succeeded + excluded.succeeded
  ),
  -- 6. Circuit breakers. Per webhook: did the endpoint answer at all, and how many connection-level failures.
  outcomes AS (
    SELECT r.webhook_id, bool_or(r.status_code IS NOT NULL) AS reachable, bool_or(r.probe) AS probed,
      count(*) FILTER (WHERE r.error_class = ANY (p_connection_classes)) AS failures
    FROM r WHERE r.test IS NOT TRUE GROUP BY r.webhook_id
  ),
  -- The webhooks whose breaker changes, read as they are now: another worker recording the same endpoint's
  -- failures at once counts on top of this one, not beside it.
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
