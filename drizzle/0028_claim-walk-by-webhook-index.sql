-- The claim's walk leases a webhook's due rows by reading only those.
--
-- At each webhook of its walk the claim picked the webhook's due rows in due order, up to its room, with the
-- webhook a parameter. Planned with the webhook's value (PL/pgSQL's first five calls, or later whenever a custom
-- plan looked cheaper), it took the due-time index (webhook_dispatch_due_idx) and kept that webhook's entries: past
-- every other webhook's open rows due earlier. The generic plan kept after those calls read every open row of the
-- webhook through webhook_dispatch_webhook_due_idx and sorted them, to keep up to 16. Sixteen webhooks with 500 open
-- dispatches each: 241-252 entries of the due-time index read to lease 16 under the first plans, 501 of the
-- webhook's index under the kept one. In `node bench/claim-record-loop.ts` (16 webhooks) the statement was planned
-- anew on 751 of 750 calls; the claim took 64-70 µs a delivery.
--
-- The walk's pick is now a function of its own (hooklane_lease_due_dispatches, which leases what it picks with
-- 0027's lease by key) that bounds the scan by (webhook, due time) pairs, which only the webhook's due index answers,
-- with sorting of either kind, sequential and bitmap scans off, and one plan per session: it reads the webhook's
-- first due entry and on until it has locked its room (test/integration/claim-plans.test.ts: 16 or 17 entries, none of another
-- index). The claim loop above now takes 46-57 µs a delivery for its claim, alternating runs. A claim of one named
-- dispatch (p_only, the push transports') reads it by key. Everything else is 0027's.
CREATE FUNCTION hooklane_lease_due_dispatches(
  p_hook text,
  p_now timestamptz,
  p_room integer,
  p_only text,
  p_worker text,
  p_until timestamptz
) RETURNS SETOF webhook_dispatch
LANGUAGE plpgsql
ROWS 16
SET enable_seqscan = off
SET enable_bitmapscan = off
SET enable_sort = off
SET enable_incremental_sort = off
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
  v_ids text[];
BEGIN
  IF p_only IS NOT NULL THEN
    -- One named dispatch, by its key.
    v_ids := ARRAY(
      SELECT d.id FROM webhook_dispatch d
      WHERE d.id = p_only AND d.webhook_id = p_hook AND d.status IN ('pending', 'error')
        AND d.next_attempt_at <= p_now AND (d.locked_until IS NULL OR d.locked_until < p_now)
      FOR UPDATE SKIP LOCKED);
  ELSE
    -- The webhook's due rows in due order, straight off webhook_dispatch_webhook_due_idx: the scan starts at the
    -- webhook's first entry, ends at its last one due, and stops at the p_room-th row it locks. Both bounds are
    -- (webhook, due time) pairs, which only that index can answer, and so is the order (sorting of either kind is
    -- off): with `webhook_id = p_hook` the order would reduce to the due time alone, which the due-time index gives
    -- too, and a plan that took it read past every other webhook's open rows.
    v_ids := ARRAY(
      SELECT d.id FROM webhook_dispatch d
      WHERE (d.webhook_id, d.next_attempt_at) >= (p_hook, '-infinity'::timestamptz)
        AND (d.webhook_id, d.next_attempt_at) <= (p_hook, p_now)
        AND d.status IN ('pending', 'error')
        AND (d.locked_until IS NULL OR d.locked_until < p_now)
      ORDER BY d.webhook_id, d.next_attempt_at
      LIMIT p_room
      FOR UPDATE SKIP LOCKED);
  END IF;
  -- Locked and checked: leased by key, as the claim leases the rows offered to it.
  RETURN QUERY SELECT * FROM hooklane_lease_dispatches(v_ids, p_worker, p_until);
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
  p_held jsonb,
  p_claim bigint,
  p_pending bigint[],
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
  v_own jsonb;
  v_unseen jsonb;
  v_kept jsonb;
  v_pending bigint[] := coalesce(p_pending, '{}'::bigint[]);
  v_took jsonb := '{}'::jsonb;
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
  v_tokens_left jsonb := '{}'::jsonb;
  v_probed text[] := '{}'::text[];
  v_offer jsonb;
  v_offer_at integer := 0;
  v_due jsonb;
  v_pick text[];
BEGIN
  PERFORM pg_advisory_xact_lock(7207312);
  v_now := clock_timestamp();

  -- This worker's own deliveries in flight: what it says it has, plus what its claims it had not heard back
  -- from when it sent this one (p_pending), or sent after this one, took. An entry stays in `recent` while a
  -- claim may still be written that has not heard of it: one it names as pending, one sent after it, or one sent
  -- after a claim still pending (that claim, written later, counts it).
  SELECT coalesce(jsonb_object_agg(e.key, e.value), '{}'::jsonb) INTO v_kept
  FROM webhook_lane_in_flight b, jsonb_each(b.recent) e
  WHERE b.worker = p_worker AND b.until > v_now
    AND (e.key::bigint = ANY (v_pending)
      OR e.key::bigint > least(p_claim, (SELECT min(p) FROM unnest(v_pending) p)));
  SELECT coalesce(jsonb_object_agg(k.key, k.value), '{}'::jsonb) INTO v_unseen
  FROM jsonb_each(v_kept) k
  WHERE k.key::bigint = ANY (v_pending) OR k.key::bigint > p_claim;
  SELECT coalesce(jsonb_object_agg(c.webhook_id, c.n), '{}'::jsonb) INTO v_own
  FROM (
    SELECT k.key AS webhook_id, sum(k.value::integer) AS n
    FROM (SELECT coalesce(p_held, '{}'::jsonb) AS counts UNION ALL SELECT u.value FROM jsonb_each(v_unseen) u) s,
      jsonb_each_text(s.counts) k
    GROUP BY 1 HAVING sum(k.value::integer) > 0
  ) c;

  SELECT f.by_webhook, f.by_origin, f.by_account INTO v_by_webhook, v_by_origin, v_by_account
  FROM hooklane_lane_in_flight(v_now, p_worker, v_own) f;

  IF p_only_ids IS NOT NULL THEN
    v_offer := hooklane_offered_dispatches(p_only_ids, v_now, v_cursor);
  END IF;

  LOOP
    EXIT WHEN v_taken >= p_limit OR v_steps >= p_max_steps;
    IF p_only IS NOT NULL THEN
      IF v_steps > 0 THEN v_complete := true; EXIT; END IF;
      SELECT d.webhook_id, d.next_attempt_at INTO v_hook, v_earliest FROM webhook_dispatch d
      WHERE d.id = p_only AND d.status IN ('pending', 'error');
      IF NOT FOUND THEN v_complete := true; EXIT; END IF;
    ELSIF p_only_ids IS NOT NULL THEN
      -- The next webhook of the given dispatches, in webhook order, once each (no wrap).
      IF v_offer_at >= jsonb_array_length(v_offer) THEN v_complete := true; EXIT; END IF;
      v_hook := v_offer -> v_offer_at ->> 'webhook';
      v_earliest := (v_offer -> v_offer_at ->> 'earliest')::timestamptz;
      v_due := v_offer -> v_offer_at -> 'due';
      v_offer_at := v_offer_at + 1;
      v_cursor := v_hook;
    ELSE
      -- The next webhook with open dispatches, and its earliest one (the index's first entry).
      SELECT n.webhook_id, n.next_attempt_at INTO v_hook, v_earliest FROM hooklane_next_open_webhook(v_cursor) n;
      IF v_hook IS NULL THEN
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

    -- Offered dispatches are taken from the list read above, not by walking the webhook's open ones: a webhook with
    -- a backlog would otherwise be read past for every offer.
    v_pick := CASE WHEN p_only_ids IS NOT NULL
      THEN ARRAY(SELECT x.id FROM jsonb_array_elements_text(v_due) WITH ORDINALITY AS x(id, n)
                 ORDER BY x.n LIMIT v_room) END;
    WITH leased AS (
      SELECT o.id, o.event_id, o.event_type, o.webhook_id, o.account, o.payload, o.attempt_count
      FROM hooklane_lease_due_dispatches(v_hook, v_now, v_room, p_only, p_worker,
        v_now + p_lease_ms * interval '1 millisecond') o
      WHERE v_pick IS NULL
      UNION ALL
      SELECT o.id, o.event_id, o.event_type, o.webhook_id, o.account, o.payload, o.attempt_count
      FROM hooklane_lease_dispatches(v_pick, p_worker, v_now + p_lease_ms * interval '1 millisecond') o
      WHERE v_pick IS NOT NULL
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
    v_own := jsonb_set(v_own, ARRAY[v_hook], to_jsonb(coalesce((v_own ->> v_hook)::integer, 0) + v_n));
    v_took := jsonb_set(v_took, ARRAY[v_hook], to_jsonb(coalesce((v_took ->> v_hook)::integer, 0) + v_n));
    IF w.rate_limit IS NOT NULL THEN
      v_tokens_left := v_tokens_left || jsonb_build_object(v_hook, v_tokens - v_n);
      IF v_n = v_room AND NOT v_cap_bound THEN
        -- Its tokens ran out this turn: the claim says when the next one is in.
        v_wait_ms := least(coalesce(v_wait_ms, 'Infinity'), greatest(0, 1 - (v_tokens - v_n)) / w.rate_limit * 1000);
      END IF;
    END IF;
    IF v_probe THEN
      -- One probe at a time: the breaker stays shut to others until it is recorded (or its lease runs out).
      v_probed := v_probed || v_hook;
    END IF;
  END LOOP;

  -- The webhooks whose rate tokens or breaker this claim changed, written once the walk is over and locked in id
  -- order, as the record statement locks them: a walk that wrapped around would otherwise lock a later webhook
  -- before an earlier one, and could deadlock with a record statement holding the earlier.
  IF v_tokens_left <> '{}'::jsonb OR cardinality(v_probed) > 0 THEN
    PERFORM 1 FROM webhook wh
    WHERE wh.id IN (SELECT jsonb_object_keys(v_tokens_left) UNION SELECT unnest(v_probed))
    ORDER BY wh.id
    FOR NO KEY UPDATE;
    -- A probe shuts the breaker to others only if it is still the breaker the walk saw, ended: one a record statement
    -- closed (null) or opened again meanwhile stays as that statement left it.
    UPDATE webhook wh
    SET rate_tokens = coalesce((v_tokens_left ->> wh.id)::double precision, wh.rate_tokens),
        rate_refilled_at = CASE WHEN v_tokens_left ? wh.id THEN v_now ELSE wh.rate_refilled_at END,
        breaker_open_until = CASE WHEN wh.id = ANY (v_probed) AND wh.breaker_open_until <= v_now
                                  THEN v_now + p_lease_ms * interval '1 millisecond'
                                  ELSE wh.breaker_open_until END
    WHERE wh.id IN (SELECT jsonb_object_keys(v_tokens_left) UNION SELECT unnest(v_probed));
  END IF;

  -- What this worker has in flight now, for the next claim of any worker; still under the lock.
  IF v_took <> '{}'::jsonb THEN
    v_kept := v_kept || jsonb_build_object(p_claim::text, v_took);
  END IF;
  IF v_own = '{}'::jsonb AND v_kept = '{}'::jsonb THEN
    DELETE FROM webhook_lane_in_flight b WHERE b.worker = p_worker;
  ELSE
    INSERT INTO webhook_lane_in_flight AS b (worker, until, by_webhook, recent)
    VALUES (p_worker, v_now + p_lease_ms * interval '1 millisecond', v_own, v_kept)
    ON CONFLICT (worker) DO UPDATE SET until = excluded.until, by_webhook = excluded.by_webhook,
      recent = excluded.recent;
  END IF;

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
