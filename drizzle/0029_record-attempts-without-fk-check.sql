-- Recording an attempt no longer checks a foreign key.
--
-- webhook_attempt.dispatch_id referenced webhook_dispatch(id). The check ran once for every attempt inserted:
-- a query of its own that locked the dispatch row (FOR KEY SHARE), right after the record statement had updated
-- that row. In `node bench/claim-record-loop.ts --limit 64` (16 webhooks, every attempt a success, alternating
-- runs) the record took 74 and 71 µs a delivery with the key and 67 and 65 µs without it, PostgreSQL's CPU 114
-- and 112 against 106 and 102 µs.
--
-- What the key guaranteed stays true:
-- * No attempt of a dispatch that is gone. The record statement writes an attempt only for a dispatch it
--   updated (its own lease: the update locks the row) or locked FOR KEY SHARE itself (a lease that ran out),
--   so a dispatch deleted meanwhile waits for the record, or the record finds it gone and writes nothing, as
--   it wrote nothing before for a dispatch deleted before it started. (With the key, a dispatch deleted after
--   the statement started made the whole batch fail.)
-- * Deleting a dispatch deletes its attempts: a statement-level trigger, in the statement that deletes them,
--   whether by retention, a listen session ended, or a webhook deleted (its dispatches cascade).
ALTER TABLE "webhook_attempt" DROP CONSTRAINT "webhook_attempt_dispatch_id_webhook_dispatch_id_fk";
--> statement-breakpoint
CREATE FUNCTION hooklane_delete_dispatch_attempts() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
  -- By webhook_attempt_dispatch_run_attempt_key, whatever the number of dispatches deleted.
  DELETE FROM webhook_attempt a WHERE a.dispatch_id = ANY (ARRAY(SELECT g.id FROM gone g));
  RETURN NULL;
END;
$$;
--> statement-breakpoint
CREATE TRIGGER webhook_dispatch_attempts_gone
AFTER DELETE ON webhook_dispatch
REFERENCING OLD TABLE AS gone
FOR EACH STATEMENT EXECUTE FUNCTION hooklane_delete_dispatch_attempts();
--> statement-breakpoint
CREATE OR REPLACE FUNCTION hooklane_record_attempts(
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
  -- The batch's other dispatches (a lease that ran out: another worker may hold the row now), locked as a
  -- foreign key's check would lock them, so that none is deleted before its attempt is in. The rows updated
  -- above are locked already.
  kept AS (
    SELECT d.id FROM webhook_dispatch d
    WHERE d.id = ANY (v_ids) AND d.id <> ALL (ARRAY(SELECT c.id FROM completed c))
    FOR KEY SHARE OF d
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
  -- nothing to record: only rows updated or locked above have their attempts written. An attempt recorded
  -- already (a lease that ran out) is not recorded twice.
  attempts AS (
    INSERT INTO webhook_attempt (dispatch_id, run, attempt, started_at, duration_ms, outcome, status_code,
      error_class, error_message, response_excerpt, signature, worker, next_attempt_at)
    SELECT r.id, r.run, r.attempt, r.started_at, r.duration_ms, r.outcome, r.status_code,
      r.error_class, r.error_message, r.response_excerpt, r.signature, p_worker, r.next_at
    FROM r
    WHERE r.run IS NOT NULL
      AND (r.id IN (SELECT c.id FROM completed c) OR r.id IN (SELECT k.id FROM kept k))
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
