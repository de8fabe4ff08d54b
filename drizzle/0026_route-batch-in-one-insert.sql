-- A route statement's events become dispatches in one insert.
--
-- hooklane_route_jobs called hooklane_route_event once per route job: one function call, one insert statement and one
-- webhook lookup per event. The batch's well-formed messages now go to hooklane_route_events together, which resolves
-- each event's owner and body once, finds every event's webhooks and inserts all the dispatches in one statement. What
-- an event routes to is unchanged (hooklane_route_event still routes a single event for the shared consumer): the owner
-- the publisher read, or the one owning the resource now; global webhooks, and the owner's; none for a deprecated type;
-- nothing twice for an event and a webhook, even when two messages of a batch carry the same event
-- (lib/db/sql/route-jobs.test.ts compares the two). The webhooks are found through their indexes, one event at a time
-- (sequential scans, hash and merge joins off), so the plan does not depend on the statistics: a plan made while there
-- were a handful of webhooks would otherwise read all of them (migration 0025, test/integration/route-plan.test.ts).
-- That plan is made once per session: planned per call, as PostgreSQL chose to, the insert took 0.23 ms to plan against
-- 0.14 ms to run for one event.
CREATE FUNCTION hooklane_route_events(p_messages jsonb[], p_rules jsonb[], OUT ids text[], OUT routed integer[])
LANGUAGE plpgsql
SET enable_seqscan = off
SET enable_hashjoin = off
SET enable_mergejoin = off
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
  WITH e AS MATERIALIZED (
    SELECT x.ord, x.message ->> 'eventId' AS event_id, x.message ->> 'type' AS type, x.account,
      -- JSON.stringify's bytes: keys in this order, no spaces; to_json escapes text as it does.
      '{"id":' || to_json(x.message ->> 'eventId')::text
        || ',"type":' || to_json(x.message ->> 'type')::text
        || ',"created":' || to_json(x.message ->> 'occurredAt')::text
        || ',"livemode":' || (x.message -> 'livemode')::text
        || ',"data":{"object":' || to_json(x.rule ->> 'object')::text
        || ',"id":' || to_json(x.message ->> 'resourceId')::text
        || ',"account":' || coalesce(to_json(x.account)::text, 'null') || '}}' AS payload
    FROM (
      SELECT m.ord, m.message, m.rule,
        -- The owner the publisher read in the mutation's transaction; looked up now only for a message without one.
        CASE jsonb_typeof(m.message -> 'account')
          WHEN 'string' THEN m.message ->> 'account'
          WHEN 'null' THEN NULL
          ELSE hooklane_event_owner(m.rule -> 'owner', m.message ->> 'resourceId') END AS account
      FROM unnest(p_messages, p_rules) WITH ORDINALITY AS m(message, rule, ord)
      -- Kept apart, so the owner is looked up once per message rather than once for the account and again for the body.
      OFFSET 0
    ) x
  ),
  inserted AS (
    INSERT INTO webhook_dispatch (event_id, event_type, webhook_id, account, payload)
    SELECT e.event_id, e.type, w.id, e.account, e.payload
    FROM e JOIN webhook w
      ON (w.events @> ARRAY[e.type]::text[] OR w.events @> ARRAY['*']::text[])
      AND (w.account IS NULL OR w.account = e.account)
    WHERE w.deleted_at IS NULL
      AND EXISTS (SELECT 1 FROM webhook_event_type t WHERE t.internal = e.type AND NOT t.deprecated)
    ORDER BY e.ord, w.id
    ON CONFLICT (event_id, webhook_id) DO NOTHING
    RETURNING id, event_id, payload
  ),
  -- Each new dispatch counts for the batch's first message that would have made it: the first of its event with its
  -- body (the account is in the body), as when the messages were routed one after the other.
  owned AS (
    SELECT i.id, (SELECT min(e.ord) FROM e WHERE e.event_id = i.event_id AND e.payload = i.payload) AS ord
    FROM inserted i
  )
  SELECT
    (SELECT coalesce(array_agg(o.id ORDER BY o.ord, o.id), '{}'::text[]) FROM owned o),
    (SELECT array_agg(coalesce(c.n, 0)::integer ORDER BY m.ord)
       FROM generate_series(1, cardinality(p_messages)) AS m(ord)
       LEFT JOIN (SELECT o.ord, count(*) AS n FROM owned o GROUP BY o.ord) c ON c.ord = m.ord)
  INTO ids, routed;
END;
$$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION hooklane_route_jobs(
  p_worker text,
  p_limit integer,
  p_route_lease_ms integer,
  p_rules jsonb,
  p_claim_limit integer,
  p_lease_ms integer,
  p_webhook_cap integer,
  p_origin_cap integer,
  p_account_cap integer,
  p_held jsonb,
  p_claim bigint,
  p_pending bigint[],
  p_large_fan_out integer
) RETURNS jsonb
LANGUAGE plpgsql
AS $$
DECLARE
  j record;
  v_rule jsonb;
  v_messages jsonb[] := '{}'::jsonb[];
  v_rules jsonb[] := '{}'::jsonb[];
  v_ids text[] := '{}'::text[];
  v_counts integer[] := '{}'::integer[];
  v_batch record;
  v_routed_jobs bigint[] := '{}'::bigint[];
  v_left jsonb := '[]'::jsonb;
  v_found integer := 0;
  v_offered text[];
  v_claim jsonb;
  v_rows jsonb := '[]'::jsonb;
  v_due_ms double precision;
BEGIN
  FOR j IN
    SELECT r.id, r.message, r.attempts FROM webhook_route_job r
    WHERE r.run_at <= now() AND (r.locked_until IS NULL OR r.locked_until < now())
    ORDER BY r.run_at, r.id
    LIMIT p_limit
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
      v_messages := array_append(v_messages, j.message);
      v_rules := array_append(v_rules, v_rule);
      v_routed_jobs := v_routed_jobs || j.id;
    ELSE
      UPDATE webhook_route_job r
      SET locked_until = now() + p_route_lease_ms * interval '1 millisecond', locked_by = p_worker,
          attempts = r.attempts + 1
      WHERE r.id = j.id;
      v_left := v_left || jsonb_build_object('id', j.id, 'message', j.message::text, 'attempts', j.attempts + 1);
    END IF;
  END LOOP;

  IF cardinality(v_messages) > 0 THEN
    v_batch := hooklane_route_events(v_messages, v_rules);
    v_ids := v_batch.ids;
    v_counts := v_batch.routed;
  END IF;
  DELETE FROM webhook_route_job r WHERE r.id = ANY (v_routed_jobs);

  IF cardinality(v_ids) >= p_large_fan_out THEN
    -- Left to the caller: statistics first, then the deliver loops' claims.
    NULL;
  ELSIF p_claim_limit > 0 AND cardinality(v_ids) > 0 THEN
    -- Offer the claim a bounded set (a large fan-out leaves the rest to the deliver loops).
    v_offered := v_ids[1:greatest(64, p_claim_limit * 2)];
    v_claim := hooklane_claim_dispatches(p_worker, p_claim_limit, p_lease_ms, '', NULL, p_webhook_cap,
      p_origin_cap, p_account_cap, cardinality(v_offered), 250, p_held, p_claim, p_pending,
      v_offered);
    v_rows := v_claim -> 'rows';
  END IF;
  IF jsonb_array_length(v_rows) < cardinality(v_ids) AND cardinality(v_ids) < p_large_fan_out THEN
    PERFORM pg_notify('hooklane_deliver', '');
  END IF;

  IF v_found < p_limit THEN
    SELECT extract(epoch FROM min(r.run_at) - now()) * 1000 INTO v_due_ms FROM webhook_route_job r
    WHERE r.locked_until IS NULL OR r.locked_until < now();
  ELSE
    v_due_ms := 0;
  END IF;

  RETURN jsonb_build_object('found', v_found, 'routed', to_jsonb(v_counts), 'dispatches', cardinality(v_ids),
    'rows', v_rows, 'left', v_left, 'dueMs', v_due_ms);
END;
$$;
