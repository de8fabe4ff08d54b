-- hooklane_route_and_claim: the postgres lane's step, in one statement and one transaction: route the due
-- route jobs, then claim due dispatches for the worker's free slots.
--
-- Called by: routeAndClaim (lib/db/sql/route-and-claim.ts), the postgres lane's loop.
--
-- Locks: the route shards it takes from, pg_try_advisory_xact_lock(7207321, shard), tried and never waited for;
-- the route jobs it takes, FOR UPDATE SKIP LOCKED; then what hooklane_route_events and hooklane_claim_dispatches
-- take.
--
-- Steps:
--   1. Up to p_route_limit due route jobs no live lease holds, from the route shards no other step holds: a job's
--      shard is its event's account hashed into 16 (an event without one: the shard of ''), so two steps at once
--      route different accounts and do not wait for each other's numbering rows (webhook_sequence), but for a
--      global webhook's, which every shard shares, or the looked-up owner's of a message naming none. Shards are
--      tried from a random one on, each oldest job first, until the batch is full: an account's events are routed
--      in the order they were published, and one account's backlog does not queue the others behind all of it. A
--      message in the shape the route message's schema accepts, of a type with a rule in p_rules, is routed here;
--      any other is leased to this worker (p_route_lease_ms) and handed back, for the shared consumer to record as
--      poison or retry.
--   2. The routed ones in one insert (hooklane_route_events), then deleted: the event's dispatches exist, so its
--      message has done its work.
--   3. With p_claim_limit > 0, the claim (hooklane_claim_dispatches) from p_after, under the same caps as every
--      claim: the new dispatches among whatever else is due, in turn.
-- Returns {found, routed, dispatches, claim, left, dueMs, traced}: the jobs taken, per routed job the dispatches it
-- made, the dispatches made in all, the claim's answer (null when none was made), the jobs handed back, when the
-- next route job no lease holds is due (0 when this step took a full batch; null when none waits), and for each
-- routed job whose message carries a `traceparent` (tracing on where it was published), [traceparent, type, its
-- place in `routed`], so the worker can record the event's route span.
CREATE OR REPLACE FUNCTION hooklane_route_and_claim(
  p_worker text, p_route_limit integer, p_route_lease_ms integer, p_rules jsonb,
  p_claim_limit integer, p_lease_ms integer, p_webhook_cap integer, p_origin_cap integer, p_account_cap integer,
  p_after text, p_held jsonb
) RETURNS json
LANGUAGE plpgsql
SET enable_seqscan = off
SET jit = off
AS $$
DECLARE
  j record;
  v_rule jsonb;
  v_messages jsonb[] := '{}';
  v_rules jsonb[] := '{}';
  v_jobs bigint[] := '{}';
  v_found integer := 0;
  v_left jsonb := '[]';
  v_ids text[] := '{}';
  v_routed integer[] := '{}';
  v_claim json;
  v_due_ms double precision;
  v_first integer := floor(random() * 16)::integer;
  v_shard integer;
  v_traced jsonb := '[]';
BEGIN
  -- Lost in a crash, this transaction's work is done again (at-least-once): no need to wait for the disk.
  PERFORM set_config('synchronous_commit', 'off', true);
  -- 1. Due route jobs from the shards this step can take, checked as the route message's schema checks them. The
  -- shards with due jobs are found by skipping through webhook_route_job_shard_idx (a probe for each, and one
  -- more), then taken from v_first on; the expression is written as the index has it.
  FOR v_shard IN
    WITH RECURSIVE due(shard) AS (
      (SELECT hashtext(coalesce(r.message ->> 'account', '')) & 15 FROM webhook_route_job r
       WHERE r.run_at <= now()
       ORDER BY 1 LIMIT 1)
      UNION ALL
      SELECT (
        SELECT hashtext(coalesce(r.message ->> 'account', '')) & 15 FROM webhook_route_job r
        WHERE (hashtext(coalesce(r.message ->> 'account', '')) & 15) > d.shard AND r.run_at <= now()
        ORDER BY 1 LIMIT 1)
      FROM due d WHERE d.shard IS NOT NULL
    )
    SELECT d.shard FROM due d WHERE d.shard IS NOT NULL ORDER BY (d.shard - v_first + 16) % 16
  LOOP
    EXIT WHEN v_found >= p_route_limit;
    CONTINUE WHEN NOT pg_try_advisory_xact_lock(7207321, v_shard);
    FOR j IN
      SELECT r.id, r.message, r.attempts FROM webhook_route_job r
      WHERE (hashtext(coalesce(r.message ->> 'account', '')) & 15) = v_shard
        AND r.run_at <= now() AND (r.locked_until IS NULL OR r.locked_until < now())
      ORDER BY r.run_at, r.id
      LIMIT p_route_limit - v_found
      FOR UPDATE SKIP LOCKED
    LOOP
      v_found := v_found + 1;
      v_rule := CASE WHEN jsonb_typeof(j.message) = 'object' THEN p_rules -> (j.message ->> 'type') END;
      IF v_rule IS NOT NULL
        AND jsonb_typeof(j.message -> 'eventId') = 'string'
        AND (j.message ->> 'eventId') ~ '^evt_[A-Za-z0-9_-]{8,64}$'
        AND jsonb_typeof(j.message -> 'resourceId') = 'string'
        AND octet_length(j.message ->> 'resourceId') BETWEEN 1 AND 200
        AND jsonb_typeof(j.message -> 'occurredAt') = 'string'
        AND (j.message ->> 'occurredAt')
          ~ '^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]{1,9})?Z$'
        AND jsonb_typeof(j.message -> 'livemode') = 'boolean'
      THEN
        v_messages := v_messages || j.message;
        v_rules := v_rules || v_rule;
        v_jobs := v_jobs || j.id;
        IF j.message ? 'traceparent' THEN
          v_traced := v_traced
            || jsonb_build_array(jsonb_build_array(j.message -> 'traceparent', j.message -> 'type', cardinality(v_jobs) - 1));
        END IF;
      ELSE
        UPDATE webhook_route_job r
        SET locked_until = now() + p_route_lease_ms * interval '1 millisecond', locked_by = p_worker,
            attempts = r.attempts + 1
        WHERE r.id = j.id;
        v_left := v_left || jsonb_build_object('id', j.id, 'message', j.message::text, 'attempts', j.attempts + 1);
      END IF;
    END LOOP;
  END LOOP;

  -- 2. Routed in one insert; their messages are done.
  IF cardinality(v_messages) > 0 THEN
    SELECT b.ids, b.routed INTO v_ids, v_routed FROM hooklane_route_events(v_messages, v_rules) b;
    DELETE FROM webhook_route_job r WHERE r.id = ANY (v_jobs);
  END IF;

  -- 3. The claim for this worker's free slots.
  IF p_claim_limit > 0 THEN
    v_claim := hooklane_claim_dispatches(p_worker, p_claim_limit, p_lease_ms, p_after, NULL, p_webhook_cap,
      p_origin_cap, p_account_cap, greatest(64, p_claim_limit * 4), 250, p_held);
  END IF;

  IF v_found < p_route_limit THEN
    SELECT extract(epoch FROM min(r.run_at) - now()) * 1000 INTO v_due_ms FROM webhook_route_job r
    WHERE r.locked_until IS NULL OR r.locked_until < now();
  ELSE
    v_due_ms := 0;
  END IF;

  RETURN json_build_object(
    'found', v_found,
    'routed', to_json(v_routed),
    'dispatches', cardinality(v_ids),
    'claim', v_claim,
    'left', v_left,
    'dueMs', v_due_ms,
    'traced', v_traced);
END;
$$;
