-- A route statement's new dispatches are inserted leased to its worker.
--
-- The route statement inserted its dispatches, then offered them to its claim, which locked each one (FOR UPDATE)
-- and leased the ones it took with an update: for every event routed, a row lock and a new row version (written to
-- every index unless the page had room), on top of the insert. The dispatches the claim may take are now inserted
-- with the lease already on them: the first greatest(64, 2 x its room) (the set it was offered before), and of each
-- webhook no more than the per-webhook cap leaves room for beside what the worker has in flight (p_held), which is
-- all the claim could take of it. The claim is offered those and takes them as they are: a dispatch the current
-- transaction inserted is offered without a lock (no other transaction can see it) and leased without an update.
-- The ones it does not take (other workers' deliveries, an origin's or account's cap, a breaker, a rate limit, a
-- webhook not active, a large fan-out) are given back by one update at the end of the statement, so that on commit
-- they are free to any worker's claim, as before. What is routed, what the claim takes and what it tells the
-- in-flight book are unchanged.
CREATE FUNCTION hooklane_route_events(
  p_messages jsonb[],
  p_rules jsonb[],
  p_worker text,
  p_lease_until timestamptz,
  p_lease_first integer,
  p_held jsonb,
  p_webhook_cap integer,
  OUT ids text[],
  OUT routed integer[],
  OUT leased text[]
)
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
  -- Each event's webhooks, found through their indexes before anything else is computed over them.
  pairs AS MATERIALIZED (
    SELECT e.ord, w.id AS webhook_id, e.event_id, e.type, e.account, e.payload
    FROM e JOIN webhook w
      ON (w.events @> ARRAY[e.type]::text[] OR w.events @> ARRAY['*']::text[])
      AND (w.account IS NULL OR w.account = e.account)
    WHERE w.deleted_at IS NULL
      AND EXISTS (SELECT 1 FROM webhook_event_type t WHERE t.internal = e.type AND NOT t.deprecated)
  ),
  -- The dispatches the claim this statement makes next may take are inserted leased to p_worker: the first
  -- p_lease_first, and of each webhook no more than its cap leaves room for beside what the worker has in flight
  -- (p_held). The claim takes them as they are, and the statement gives back those it does not take (other
  -- workers' deliveries, an origin's or account's cap, a breaker, a rate limit, a webhook not active).
  inserted AS (
    INSERT INTO webhook_dispatch (event_id, event_type, webhook_id, account, payload, locked_by, locked_until)
    SELECT c.event_id, c.type, c.webhook_id, c.account, c.payload,
      CASE WHEN c.leased THEN p_worker END, CASE WHEN c.leased THEN p_lease_until END
    FROM (
      SELECT p.*,
        row_number() OVER (ORDER BY p.ord, p.webhook_id) <= p_lease_first
          AND row_number() OVER (PARTITION BY p.webhook_id ORDER BY p.ord)
            <= p_webhook_cap - coalesce((p_held ->> p.webhook_id)::integer, 0) AS leased
      FROM pairs p
    ) c
    ORDER BY c.ord, c.webhook_id
    ON CONFLICT (event_id, webhook_id) DO NOTHING
    RETURNING id, event_id, payload, locked_by IS NOT NULL AS leased
  ),
  -- Each new dispatch counts for the batch's first message that would have made it: the first of its event with its
  -- body (the account is in the body), as when the messages were routed one after the other.
  owned AS (
    SELECT i.id, i.leased, (SELECT min(e.ord) FROM e WHERE e.event_id = i.event_id AND e.payload = i.payload) AS ord
    FROM inserted i
  )
  SELECT
    (SELECT coalesce(array_agg(o.id ORDER BY o.ord, o.id), '{}'::text[]) FROM owned o),
    (SELECT array_agg(coalesce(c.n, 0)::integer ORDER BY m.ord)
       FROM generate_series(1, cardinality(p_messages)) AS m(ord)
       LEFT JOIN (SELECT o.ord, count(*) AS n FROM owned o GROUP BY o.ord) c ON c.ord = m.ord),
    (SELECT coalesce(array_agg(o.id ORDER BY o.ord, o.id) FILTER (WHERE o.leased), '{}'::text[]) FROM owned o)
  INTO ids, routed, leased;
END;
$$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION hooklane_offered_dispatches(p_ids text[], p_now timestamptz, p_after text) RETURNS jsonb
LANGUAGE plpgsql
SET enable_seqscan = off
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
  v_offer jsonb;
BEGIN
  -- Per webhook after p_after (in webhook order) of the open dispatches among p_ids: the earliest due time, and the
  -- ones due and free to lease, in due order and then in the order given (a route statement's: its events' order).
  -- A dispatch this transaction inserted is free to lease (no other sees it) and needs no lock.
  WITH i AS (SELECT i.id, min(i.n) AS n FROM unnest(p_ids) WITH ORDINALITY AS i(id, n) GROUP BY i.id)
  SELECT coalesce(jsonb_agg(jsonb_build_object('webhook', o.webhook_id, 'earliest', o.earliest, 'due', o.ids)
      ORDER BY o.webhook_id), '[]'::jsonb)
  INTO v_offer
  FROM (
    SELECT d.webhook_id, min(d.next_attempt_at) AS earliest,
      coalesce(jsonb_agg(d.id ORDER BY d.next_attempt_at, d.n)
        FILTER (WHERE d.next_attempt_at <= p_now AND (d.own OR d.locked_until IS NULL OR d.locked_until < p_now)),
        '[]'::jsonb) AS ids
    FROM (
      SELECT i.n, d.*, true AS own FROM i CROSS JOIN LATERAL (
        SELECT d.id, d.webhook_id, d.status, d.next_attempt_at, d.locked_until FROM webhook_dispatch d
        WHERE d.id = i.id AND d.xmin = pg_current_xact_id()::xid
        OFFSET 0
      ) d
      UNION ALL
      SELECT i.n, d.*, false AS own FROM i CROSS JOIN LATERAL (
        -- By the key alone (no condition here that an index of open rows could answer), and locked as the claim's
        -- walk locks what it picks: a row another claim holds is not offered.
        SELECT d.id, d.webhook_id, d.status, d.next_attempt_at, d.locked_until FROM webhook_dispatch d
        WHERE d.id = i.id AND d.xmin <> pg_current_xact_id()::xid
        OFFSET 0
        FOR UPDATE SKIP LOCKED
      ) d
    ) d
    WHERE d.status IN ('pending', 'error') AND d.webhook_id > p_after
    GROUP BY d.webhook_id
  ) o;
  RETURN v_offer;
END;
$$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION hooklane_lease_dispatches(p_ids text[], p_worker text, p_until timestamptz)
RETURNS SETOF webhook_dispatch
LANGUAGE plpgsql
ROWS 16
SET enable_seqscan = off
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
  -- Rows this transaction inserted leased to p_worker (a route statement's) are taken as they are.
  RETURN QUERY
  SELECT d.* FROM webhook_dispatch d
  WHERE d.id = ANY (p_ids) AND d.xmin = pg_current_xact_id()::xid AND d.locked_by = p_worker;
  RETURN QUERY
  WITH leased AS (
    UPDATE webhook_dispatch d SET locked_until = p_until, locked_by = p_worker
    WHERE d.id = ANY (p_ids) AND NOT (d.xmin = pg_current_xact_id()::xid AND d.locked_by IS NOT DISTINCT FROM p_worker)
    RETURNING d.*
  )
  SELECT * FROM leased;
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
  v_offered text[] := '{}'::text[];
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
    -- The claim below is offered a bounded set, inserted leased to this worker (a large fan-out leaves the rest
    -- to the deliver loops).
    v_batch := hooklane_route_events(v_messages, v_rules, p_worker, now() + p_lease_ms * interval '1 millisecond',
      CASE WHEN p_claim_limit > 0 THEN greatest(64, p_claim_limit * 2) ELSE 0 END, p_held, p_webhook_cap);
    v_ids := v_batch.ids;
    v_counts := v_batch.routed;
    v_offered := v_batch.leased;
  END IF;
  DELETE FROM webhook_route_job r WHERE r.id = ANY (v_routed_jobs);

  IF cardinality(v_ids) >= p_large_fan_out THEN
    -- Left to the caller: statistics first, then the deliver loops' claims.
    NULL;
  ELSIF cardinality(v_offered) > 0 THEN
    v_claim := hooklane_claim_dispatches(p_worker, p_claim_limit, p_lease_ms, '', NULL, p_webhook_cap,
      p_origin_cap, p_account_cap, cardinality(v_offered), 250, p_held, p_claim, p_pending,
      v_offered);
    v_rows := v_claim -> 'rows';
  END IF;
  -- What the claim did not take (caps, breakers, rate limits, a webhook not active, a large fan-out) is anyone's.
  IF cardinality(v_offered) > jsonb_array_length(v_rows) THEN
    UPDATE webhook_dispatch d SET locked_by = NULL, locked_until = NULL
    WHERE d.id = ANY (v_offered)
      AND d.id <> ALL (ARRAY(SELECT r ->> 'id' FROM jsonb_array_elements(v_rows) r));
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
