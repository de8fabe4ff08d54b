-- A shorter chain from the API's 2xx to the POST (issue 18). The route stage claims its route jobs, resolves
-- each event's owner, inserts its dispatches and deletes the jobs in one statement (hooklane_route_jobs), and
-- in the same transaction leases the new dispatches to itself under the claim's own rules, for its deliver
-- loop to POST at once: no deliver claim and no wake-up in between. Rows the rules hold back (a cap, a breaker,
-- a rate limit, a paused webhook, the worker's own concurrency) stay pending, and a NOTIFY wakes the deliver
-- loops for them, as before.
--
-- hooklane_claim_dispatches gains p_only_ids: claim only these dispatches, under the same rules (the advisory
-- lock, the caps across workers, breakers, rate limits), visiting their webhooks once each. Otherwise it is
-- as in 0014; the 0012 signature stays, as this one with no id list, for workers of the previous release.
CREATE OR REPLACE FUNCTION hooklane_claim_dispatches(
  p_worker text,
  p_limit integer,
  p_lease_ms integer,
  p_after text,
  p_only text,
  p_webhook_cap integer,
  p_origin_cap integer,
  p_account_cap integer,
  p_max_steps integer,
  p_recheck_ms integer,
  p_settled text[],
  p_only_ids text[]
) RETURNS jsonb
LANGUAGE plpgsql
AS $$
DECLARE
  v_now timestamptz;
  v_rows jsonb := '[]'::jsonb;
  v_taken integer := 0;
  v_steps integer := 0;
  v_after text := coalesce(p_after, '');
  v_cursor text := coalesce(p_after, '');
  v_wrapped boolean := coalesce(p_after, '') = '';
  v_complete boolean := false;
  v_capped boolean := false;
  v_wait_ms double precision;
  v_by_webhook jsonb;
  v_by_origin jsonb;
  v_by_account jsonb;
  v_hook text;
  v_earliest timestamptz;
  v_next timestamptz;
  w record;
  v_room integer;
  v_cap_bound boolean;
  v_tokens double precision;
  v_probe boolean;
  v_got jsonb;
  v_n integer;
BEGIN
  PERFORM pg_advisory_xact_lock(7207312);
  v_now := clock_timestamp();

  SELECT f.by_webhook, f.by_origin, f.by_account INTO v_by_webhook, v_by_origin, v_by_account
  FROM hooklane_in_flight(v_now, p_worker, p_settled) f;

  LOOP
    EXIT WHEN v_taken >= p_limit OR v_steps >= p_max_steps;
    IF p_only IS NOT NULL THEN
      IF v_steps > 0 THEN v_complete := true; EXIT; END IF;
      SELECT d.webhook_id, d.next_attempt_at INTO v_hook, v_earliest FROM webhook_dispatch d
      WHERE d.id = p_only AND d.status IN ('pending', 'error');
      IF NOT FOUND THEN v_complete := true; EXIT; END IF;
    ELSIF p_only_ids IS NOT NULL THEN
      -- The next webhook of the given dispatches, in webhook order, once each (no wrap).
      SELECT d.webhook_id, min(d.next_attempt_at) INTO v_hook, v_earliest FROM webhook_dispatch d
      WHERE d.id = ANY (p_only_ids) AND d.status IN ('pending', 'error') AND d.webhook_id > v_cursor
      GROUP BY d.webhook_id
      ORDER BY d.webhook_id
      LIMIT 1;
      IF NOT FOUND THEN v_complete := true; EXIT; END IF;
      v_cursor := v_hook;
    ELSE
      -- The next webhook with open dispatches, and its earliest one (the index's first entry).
      SELECT d.webhook_id, d.next_attempt_at INTO v_hook, v_earliest FROM webhook_dispatch d
      WHERE d.status IN ('pending', 'error') AND d.webhook_id > v_cursor
      ORDER BY d.webhook_id, d.next_attempt_at
      LIMIT 1;
      IF NOT FOUND THEN
        IF v_wrapped THEN v_complete := true; EXIT; END IF;
        v_wrapped := true;
        v_cursor := '';
        CONTINUE;
      END IF;
      IF v_wrapped AND v_after <> '' AND v_hook > v_after THEN v_complete := true; EXIT; END IF;
      v_cursor := v_hook;
    END IF;
    v_steps := v_steps + 1;

    SELECT wh.status, wh.origin, coalesce(wh.account, '') AS account_key, wh.url, wh.scheme, wh.secret_sealed,
      wh.previous_secret_sealed, wh.previous_secret_expires_at, wh.rate_limit, wh.rate_tokens,
      wh.rate_refilled_at, wh.breaker_open_until
    INTO w FROM webhook wh WHERE wh.id = v_hook;
    IF NOT FOUND OR w.status <> 'active' THEN CONTINUE; END IF;
    IF v_earliest > v_now THEN
      v_wait_ms := least(coalesce(v_wait_ms, 'Infinity'), extract(epoch FROM v_earliest - v_now) * 1000);
      CONTINUE;
    END IF;

    v_probe := false;
    IF w.breaker_open_until IS NOT NULL THEN
      IF w.breaker_open_until > v_now THEN
        v_wait_ms := least(coalesce(v_wait_ms, 'Infinity'), extract(epoch FROM w.breaker_open_until - v_now) * 1000);
        CONTINUE;
      END IF;
      v_probe := true;
    END IF;

    v_room := least(
      p_limit - v_taken,
      p_webhook_cap - coalesce((v_by_webhook ->> v_hook)::integer, 0),
      p_origin_cap - coalesce((v_by_origin ->> w.origin)::integer, 0),
      p_account_cap - coalesce((v_by_account ->> w.account_key)::integer, 0));
    -- Room bounded by a cap rather than by what is left of this claim: a slot freed later means more to take.
    v_cap_bound := v_room < p_limit - v_taken;
    IF v_probe THEN v_room := least(v_room, 1); END IF;
    IF w.rate_limit IS NOT NULL THEN
      v_tokens := least(greatest(1, w.rate_limit / 10.0),
        coalesce(w.rate_tokens, 1) +
        extract(epoch FROM v_now - coalesce(w.rate_refilled_at, v_now)) * w.rate_limit);
      IF v_tokens < 1 THEN
        v_wait_ms := least(coalesce(v_wait_ms, 'Infinity'), (1 - v_tokens) / w.rate_limit * 1000);
        CONTINUE;
      END IF;
      -- Tokens, not a cap, bound this turn: a freed slot would not let it take more.
      IF floor(v_tokens)::integer <= v_room THEN v_cap_bound := false; END IF;
      v_room := least(v_room, floor(v_tokens)::integer);
    END IF;
    IF v_room <= 0 THEN v_capped := true; CONTINUE; END IF;

    WITH picked AS (
      SELECT d.id FROM webhook_dispatch d
      WHERE d.webhook_id = v_hook AND d.status IN ('pending', 'error') AND d.next_attempt_at <= v_now
        AND (d.locked_until IS NULL OR d.locked_until < v_now)
        AND (p_only IS NULL OR d.id = p_only)
        AND (p_only_ids IS NULL OR d.id = ANY (p_only_ids))
      ORDER BY d.next_attempt_at
      LIMIT v_room
      FOR UPDATE SKIP LOCKED
    ), leased AS (
      UPDATE webhook_dispatch d
      SET locked_until = v_now + p_lease_ms * interval '1 millisecond', locked_by = p_worker
      FROM picked WHERE d.id = picked.id
      RETURNING d.id, d.event_id, d.event_type, d.webhook_id, d.account, d.payload, d.attempt_count
    )
    SELECT coalesce(jsonb_agg(jsonb_build_object(
        'id', l.id, 'eventId', l.event_id, 'eventType', l.event_type, 'webhookId', l.webhook_id,
        'account', l.account, 'payload', l.payload, 'attempt', l.attempt_count + 1, 'url', w.url,
        'origin', w.origin, 'scheme', w.scheme, 'secretSealed', w.secret_sealed,
        'previousSecretSealed', w.previous_secret_sealed,
        'previousSecretExpiresAt', w.previous_secret_expires_at, 'probe', v_probe)), '[]'::jsonb),
      count(*)
    INTO v_got, v_n FROM leased l;

    IF v_n < v_room AND p_only IS NULL AND p_only_ids IS NULL THEN
      -- Fewer due rows than room: when does this webhook's next one fall due?
      SELECT min(d.next_attempt_at) INTO v_next FROM webhook_dispatch d
      WHERE d.webhook_id = v_hook AND d.status IN ('pending', 'error') AND d.next_attempt_at > v_now;
      IF v_next IS NOT NULL THEN
        v_wait_ms := least(coalesce(v_wait_ms, 'Infinity'), extract(epoch FROM v_next - v_now) * 1000);
      END IF;
    END IF;
    CONTINUE WHEN v_n = 0;

    IF v_n = v_room AND v_cap_bound AND NOT v_probe THEN v_capped := true; END IF;
    v_rows := v_rows || v_got;
    v_taken := v_taken + v_n;
    v_by_webhook := jsonb_set(v_by_webhook, ARRAY[v_hook],
      to_jsonb(coalesce((v_by_webhook ->> v_hook)::integer, 0) + v_n));
    v_by_origin := jsonb_set(v_by_origin, ARRAY[w.origin],
      to_jsonb(coalesce((v_by_origin ->> w.origin)::integer, 0) + v_n));
    v_by_account := jsonb_set(v_by_account, ARRAY[w.account_key],
      to_jsonb(coalesce((v_by_account ->> w.account_key)::integer, 0) + v_n));
    IF w.rate_limit IS NOT NULL THEN
      UPDATE webhook SET rate_tokens = v_tokens - v_n, rate_refilled_at = v_now WHERE id = v_hook;
      IF v_n = v_room AND NOT v_cap_bound THEN
        -- Its tokens ran out this turn: the claim says when the next one is in.
        v_wait_ms := least(coalesce(v_wait_ms, 'Infinity'), greatest(0, 1 - (v_tokens - v_n)) / w.rate_limit * 1000);
      END IF;
    END IF;
    IF v_probe THEN
      -- One probe at a time: the breaker stays shut to others until it is recorded (or its lease runs out).
      UPDATE webhook SET breaker_open_until = v_now + p_lease_ms * interval '1 millisecond' WHERE id = v_hook;
    END IF;
  END LOOP;

  RETURN jsonb_build_object(
    'rows', v_rows,
    'cursor', v_cursor,
    'waitMs', CASE
      WHEN v_taken >= p_limit OR NOT v_complete THEN 0
      WHEN v_capped THEN least(coalesce(v_wait_ms, p_recheck_ms), p_recheck_ms)
      WHEN v_wait_ms = 'Infinity' THEN NULL
      ELSE v_wait_ms END);
END;
$$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION hooklane_claim_dispatches(
  p_worker text,
  p_limit integer,
  p_lease_ms integer,
  p_after text,
  p_only text,
  p_webhook_cap integer,
  p_origin_cap integer,
  p_account_cap integer,
  p_max_steps integer,
  p_recheck_ms integer,
  p_settled text[]
) RETURNS jsonb
LANGUAGE sql
AS $$
  SELECT hooklane_claim_dispatches(p_worker, p_limit, p_lease_ms, p_after, p_only, p_webhook_cap, p_origin_cap,
    p_account_cap, p_max_steps, p_recheck_ms, p_settled, NULL::text[])
$$;
--> statement-breakpoint
-- Routes one event: resolves the account that owns its resource (p_rule: the catalogue's `owner` strategy and
-- `object`; table and column names come from the reviewed catalogue, quoted here as identifiers), builds the
-- thin body (the same bytes as buildEventBody) and inserts one pending dispatch per webhook that hears it
-- (global webhooks always, account webhooks only for their own account, paused and disabled ones included,
-- none for a type that is deprecated or was never synced). Idempotent per event x webhook: returns only the
-- ids it created. Both transports route through it.
CREATE OR REPLACE FUNCTION hooklane_route_event(p_message jsonb, p_rule jsonb) RETURNS text[]
LANGUAGE plpgsql
AS $$
DECLARE
  v_owner jsonb := p_rule -> 'owner';
  v_type text := p_message ->> 'type';
  v_resource text := p_message ->> 'resourceId';
  v_account text;
  v_payload text;
  v_ids text[];
BEGIN
  CASE v_owner ->> 'kind'
    WHEN 'self' THEN v_account := v_resource;
    WHEN 'none' THEN v_account := NULL;
    WHEN 'direct' THEN
      EXECUTE format('SELECT %I::text FROM %I WHERE id = $1', v_owner ->> 'column', v_owner ->> 'table')
        INTO v_account USING v_resource;
    WHEN 'via' THEN
      EXECUTE format('SELECT p.%I::text FROM %I t JOIN %I p ON p.id = t.%I WHERE t.id = $1',
        v_owner ->> 'column', v_owner ->> 'table', v_owner ->> 'parentTable', v_owner ->> 'reference')
        INTO v_account USING v_resource;
    ELSE
      RAISE EXCEPTION 'unknown owner strategy %', v_owner ->> 'kind';
  END CASE;

  -- JSON.stringify's bytes: keys in this order, no spaces; to_json escapes text as it does.
  v_payload := '{"id":' || to_json(p_message ->> 'eventId')::text
    || ',"type":' || to_json(v_type)::text
    || ',"created":' || to_json(p_message ->> 'occurredAt')::text
    || ',"livemode":' || (p_message -> 'livemode')::text
    || ',"data":{"object":' || to_json(p_rule ->> 'object')::text
    || ',"id":' || to_json(v_resource)::text
    || ',"account":' || coalesce(to_json(v_account)::text, 'null') || '}}';

  WITH inserted AS (
    INSERT INTO webhook_dispatch (event_id, event_type, webhook_id, account, payload)
    SELECT p_message ->> 'eventId', v_type, w.id, v_account, v_payload
    FROM webhook w
    WHERE (w.events @> ARRAY[v_type]::text[] OR w.events @> ARRAY['*']::text[])
      AND (w.account IS NULL OR w.account = v_account)
      AND w.deleted_at IS NULL
      AND EXISTS (SELECT 1 FROM webhook_event_type t WHERE t.internal = v_type AND NOT t.deprecated)
    ON CONFLICT (event_id, webhook_id) DO NOTHING
    RETURNING id
  )
  SELECT coalesce(array_agg(id), '{}'::text[]) INTO v_ids FROM inserted;
  RETURN v_ids;
END;
$$;
--> statement-breakpoint
-- The postgres transport's route stage in one statement: claims up to p_limit due route jobs
-- (FOR UPDATE SKIP LOCKED), routes each whose message is well formed and names a type of p_rules
-- (hooklane_route_event) and deletes it; leases the others to p_worker for p_route_lease_ms, as
-- claimRouteJobs does, for the shared consumer to judge (poison, or routed there). Then leases up to
-- p_claim_limit of the new dispatches to p_worker under the claim's rules (hooklane_claim_dispatches with
-- p_only_ids) and NOTIFYs the deliver channel when any new dispatch stays pending. A statement that created
-- p_large_fan_out dispatches or more does neither: the caller refreshes the table's statistics and then wakes the
-- deliver loops, so no claim plans against a table that just grew by a large fan-out. The well-formedness
-- check is no looser than the route message's schema: what it refuses goes to the consumer, which decides.
-- A job that fails here fails the whole statement; the caller then routes the batch one job at a time.
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
  p_settled text[],
  p_large_fan_out integer
) RETURNS jsonb
LANGUAGE plpgsql
AS $$
DECLARE
  j record;
  v_rule jsonb;
  v_new text[];
  v_ids text[] := '{}'::text[];
  v_routed jsonb := '[]'::jsonb;
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
      v_new := hooklane_route_event(j.message, v_rule);
      v_ids := v_ids || v_new;
      v_routed := v_routed || to_jsonb(cardinality(v_new));
      v_routed_jobs := v_routed_jobs || j.id;
    ELSE
      UPDATE webhook_route_job r
      SET locked_until = now() + p_route_lease_ms * interval '1 millisecond', locked_by = p_worker,
          attempts = r.attempts + 1
      WHERE r.id = j.id;
      v_left := v_left || jsonb_build_object('id', j.id, 'message', j.message::text, 'attempts', j.attempts + 1);
    END IF;
  END LOOP;

  DELETE FROM webhook_route_job r WHERE r.id = ANY (v_routed_jobs);

  IF cardinality(v_ids) >= p_large_fan_out THEN
    -- Left to the caller: statistics first, then the deliver loops' claims.
    NULL;
  ELSIF p_claim_limit > 0 AND cardinality(v_ids) > 0 THEN
    -- Offer the claim a bounded set (a large fan-out leaves the rest to the deliver loops).
    v_offered := v_ids[1:greatest(64, p_claim_limit * 2)];
    v_claim := hooklane_claim_dispatches(p_worker, p_claim_limit, p_lease_ms, '', NULL, p_webhook_cap,
      p_origin_cap, p_account_cap, cardinality(v_offered), 250, p_settled, v_offered);
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

  RETURN jsonb_build_object('found', v_found, 'routed', v_routed, 'dispatches', cardinality(v_ids),
    'rows', v_rows, 'left', v_left, 'dueMs', v_due_ms);
END;
$$;
