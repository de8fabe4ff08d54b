-- hooklane_claim_dispatches: leases due dispatches to one worker, fairly and under every cap.
--
-- Called by: claimDispatches (lib/db/sql/claim-dispatches.ts; the Vercel lane, one named dispatch at a time) and
-- hooklane_route_and_claim (the postgres lane's step).
--
-- Locks: per webhook, its key locks: pg_try_advisory_xact_lock(7207320, hashtext(key)) for 'origin:<origin>',
-- 'account:<owning account, "" for a global webhook>' and 'webhook:<id>', tried and never waited for (a key another
-- claim holds passes the webhook over, and the claim says it was contended). With p_only (one dispatch) they are
-- waited for instead, webhook's first, then origin's, then account's: one webhook per claim, so two such claims
-- never wait in a circle, and a claim that tries never waits at all. The open rows it leases (by their update: under the webhook's
-- key no other claim leases them, and a record or a skip changing one meanwhile is waited for). The webhooks
-- whose rate tokens or breaker it changes, FOR NO KEY UPDATE in id order at the end (as the record statement
-- locks them). Its own row of webhook_lane_in_flight. The ledger row of an ordered event it flags.
--
-- Steps:
--   1. What this worker has running (p_held, per webhook), per origin and account as the webhooks are now; and the
--      origins and accounts the book says are at their cap (a hint, read without their keys).
--   2. The walk: webhooks with open rows in id order after p_after (round-robin; wraps once), at most p_max_steps,
--      read sixteen first, then as many again as it has visited. One not active (or whose endpoint has not consented yet), not due, or whose origin or account this claim found full or held by
--      another claim is passed over at once. At each other: its key locks; the webhook as it is now (breaker? rate
--      tokens?); then, in a statement of its own (so it sees every claim that held those locks before),
--      what the other workers' book rows say is in flight there. Its room is what the three caps leave, then at
--      most one for a breaker's probe and the rate tokens. It leases that many due open rows, earliest first,
--      passing over those an earlier event of their resource holds back (hooklane_held_in_order's test, written
--      out); an ordered event
--      sent after undelivered earlier ones of its resource names them in its body, once, before its first attempt.
--   3. Rate tokens spent and probes sent, written to their webhooks.
--   4. This worker's book row: what it had running and what it took.
-- Returns {groups, cursor, waitMs, contended}: per webhook taken from, what its attempts need of it and its leased
-- dispatches (each with its trace's `traceparent`, null without one; the webhook with its owning account and whether
-- it also signs with its account's ed25519 key); where the next claim starts; when to claim again (0 now, null when nothing is scheduled); and whether
-- a key another claim held made it pass a webhook over.
CREATE OR REPLACE FUNCTION hooklane_claim_dispatches(
  p_worker text, p_limit integer, p_lease_ms integer, p_after text, p_only text,
  p_webhook_cap integer, p_origin_cap integer, p_account_cap integer,
  p_max_steps integer, p_recheck_ms integer, p_held jsonb
) RETURNS json
LANGUAGE plpgsql
SET enable_seqscan = off
SET enable_bitmapscan = off
SET enable_sort = off
SET enable_hashjoin = off
SET enable_mergejoin = off
SET jit = off
AS $$
DECLARE
  v_now timestamptz := clock_timestamp();
  v_until timestamptz := clock_timestamp() + p_lease_ms * interval '1 millisecond';
  v_groups text[] := '{}';
  v_taken integer := 0;
  v_steps integer := 0;
  v_cursor text := coalesce(p_after, '');
  v_wrapped boolean := coalesce(p_after, '') = '';
  v_complete boolean := false;
  v_capped boolean := false;
  v_contended boolean := false;
  v_wait_ms double precision;
  v_own_webhook jsonb;
  v_own_origin jsonb;
  v_own_account jsonb;
  v_book jsonb;
  v_hook text;
  v_earliest timestamptz;
  v_active boolean;
  v_origin text;
  v_account text;
  v_hooks text[];
  v_earliests timestamptz[];
  v_actives boolean[];
  v_origins text[];
  v_accounts text[];
  v_at integer := 0;
  v_held_back integer := 0;
  w record;
  v_room integer;
  v_origin_room integer;
  v_account_room integer;
  v_full_origins text[] := '{}';
  v_full_accounts text[] := '{}';
  v_busy_origins text[] := '{}';
  v_busy_accounts text[] := '{}';
  v_cap_bound boolean;
  v_tokens double precision;
  v_probe boolean;
  v_got text;
  v_n integer;
  v_next timestamptz;
  v_tokens_left jsonb := '{}';
  v_probed text[] := '{}';
BEGIN
  -- Lost in a crash, this transaction's work is done again (at-least-once): no need to wait for the disk.
  PERFORM set_config('synchronous_commit', 'off', true);
  -- 1. What this worker has running.
  WITH h AS (
    SELECT h.key AS webhook_id, h.value::integer AS n, wh.origin, coalesce(wh.account, '') AS account_key
    FROM jsonb_each_text(coalesce(p_held, '{}')) h JOIN webhook wh ON wh.id = h.key
    WHERE h.value::integer > 0
  )
  SELECT
    (SELECT coalesce(jsonb_object_agg(h.webhook_id, h.n), '{}') FROM h),
    (SELECT coalesce(jsonb_object_agg(x.origin, x.n), '{}') FROM (SELECT origin, sum(n) AS n FROM h GROUP BY 1) x),
    (SELECT coalesce(jsonb_object_agg(x.account_key, x.n), '{}')
       FROM (SELECT account_key, sum(n) AS n FROM h GROUP BY 1) x)
  INTO v_own_webhook, v_own_origin, v_own_account;
  -- Origins and accounts at their cap as the book says now, read without their keys: a hint only, so that the walk
  -- passes their webhooks over (a slot freed since waits for the next claim); what the claim takes is counted under
  -- the keys.
  WITH counts AS (
    SELECT b.by_origin, b.by_account FROM webhook_lane_in_flight b WHERE b.worker <> p_worker AND b.until > v_now
    UNION ALL
    SELECT v_own_origin, v_own_account
  )
  SELECT
    (SELECT coalesce(array_agg(t.key), '{}') FROM (
       SELECT e.key FROM counts c, jsonb_each_text(c.by_origin) e GROUP BY e.key
       HAVING sum(e.value::integer) >= p_origin_cap) t),
    (SELECT coalesce(array_agg(t.key), '{}') FROM (
       SELECT e.key FROM counts c, jsonb_each_text(c.by_account) e GROUP BY e.key
       HAVING sum(e.value::integer) >= p_account_cap) t)
  INTO v_full_origins, v_full_accounts;

  -- 2. The walk.
  LOOP
    EXIT WHEN v_taken >= p_limit OR v_steps >= p_max_steps;
    -- Sixteen webhooks in a row looked at under their keys and held back by a cap or another claim: the lane is at
    -- its caps, and what a freed slot allows is for the next claim (it starts where this one stopped).
    IF v_held_back >= 16 THEN v_complete := true; EXIT; END IF;
    IF p_only IS NOT NULL THEN
      IF v_steps > 0 THEN v_complete := true; EXIT; END IF;
      SELECT o.webhook_id, o.next_attempt_at,
        wh.status = 'active' AND wh.consent_state IS DISTINCT FROM 'pending', wh.origin, coalesce(wh.account, '')
      INTO v_hook, v_earliest, v_active, v_origin, v_account
      FROM webhook_dispatch_open o JOIN webhook wh ON wh.id = o.webhook_id WHERE o.dispatch_id = p_only;
      IF NOT FOUND THEN v_complete := true; EXIT; END IF;
    ELSE
      IF v_at >= coalesce(cardinality(v_hooks), 0) THEN
        -- The next webhooks with open rows, each with its earliest (its first entry in the index: a probe each), and
        -- what is needed to pass over one without a lock: whether it is active, its origin and account. Sixteen
        -- first, as most claims fill their room within them; then as many again as the claim has visited (16, 32,
        -- 64…, never past p_max_steps): a claim that stops early (its room filled, or sixteen held back in a row)
        -- has probed at most twice the webhooks it looked at, and a long walk still takes few reads.
        WITH RECURSIVE next(webhook_id, next_attempt_at, n) AS (
          (SELECT o.webhook_id, o.next_attempt_at, 1 FROM webhook_dispatch_open o WHERE o.webhook_id > v_cursor
           ORDER BY o.webhook_id, o.next_attempt_at LIMIT 1)
          UNION ALL
          SELECT x.webhook_id, x.next_attempt_at, next.n + 1 FROM next CROSS JOIN LATERAL (
            SELECT o.webhook_id, o.next_attempt_at FROM webhook_dispatch_open o WHERE o.webhook_id > next.webhook_id
            ORDER BY o.webhook_id, o.next_attempt_at LIMIT 1) x
          WHERE next.n < least(greatest(16, v_steps), p_max_steps - v_steps)
        )
        SELECT array_agg(n.webhook_id ORDER BY n.n), array_agg(n.next_attempt_at ORDER BY n.n),
          array_agg(coalesce(wh.status = 'active' AND wh.consent_state IS DISTINCT FROM 'pending', false) ORDER BY n.n),
          array_agg(wh.origin ORDER BY n.n),
          array_agg(coalesce(wh.account, '') ORDER BY n.n)
        INTO v_hooks, v_earliests, v_actives, v_origins, v_accounts
        FROM next n LEFT JOIN webhook wh ON wh.id = n.webhook_id;
        v_at := 0;
        IF v_hooks IS NULL THEN
          IF v_wrapped THEN v_complete := true; EXIT; END IF;
          v_wrapped := true;
          v_cursor := '';
          CONTINUE;
        END IF;
      END IF;
      v_at := v_at + 1;
      v_hook := v_hooks[v_at];
      IF v_wrapped AND coalesce(p_after, '') <> '' AND v_hook > p_after THEN v_complete := true; EXIT; END IF;
      v_cursor := v_hook;
      v_earliest := v_earliests[v_at];
      v_active := v_actives[v_at];
      v_origin := v_origins[v_at];
      v_account := v_accounts[v_at];
    END IF;
    v_steps := v_steps + 1;
    CONTINUE WHEN NOT v_active;
    IF v_earliest > v_now THEN
      v_wait_ms := least(coalesce(v_wait_ms, 'Infinity'), extract(epoch FROM v_earliest - v_now) * 1000);
      CONTINUE;
    END IF;
    -- An origin or an account this claim found full stays full to the end of it (no other claim takes from it while
    -- this one holds its key): its other webhooks are passed over without another look.
    IF v_origin = ANY (v_full_origins) OR v_account = ANY (v_full_accounts) THEN
      v_capped := true;
      CONTINUE;
    END IF;
    CONTINUE WHEN v_origin = ANY (v_busy_origins) OR v_account = ANY (v_busy_accounts);

    -- Its keys: for one named dispatch, waited for in this order; otherwise tried, an origin's or an account's that
    -- another claim holds passing over the rest of its webhooks in this claim.
    IF p_only IS NOT NULL THEN
      PERFORM pg_advisory_xact_lock(7207320, hashtext('webhook:' || v_hook));
      PERFORM pg_advisory_xact_lock(7207320, hashtext('origin:' || v_origin));
      PERFORM pg_advisory_xact_lock(7207320, hashtext('account:' || v_account));
    ELSIF NOT pg_try_advisory_xact_lock(7207320, hashtext('origin:' || v_origin)) THEN
      v_contended := true;
      v_busy_origins := v_busy_origins || v_origin;
      v_held_back := v_held_back + 1;
      CONTINUE;
    ELSIF NOT pg_try_advisory_xact_lock(7207320, hashtext('account:' || v_account)) THEN
      v_contended := true;
      v_busy_accounts := v_busy_accounts || v_account;
      v_held_back := v_held_back + 1;
      CONTINUE;
    ELSIF NOT pg_try_advisory_xact_lock(7207320, hashtext('webhook:' || v_hook)) THEN
      v_contended := true;
      v_held_back := v_held_back + 1;
      CONTINUE;
    END IF;
    -- Read under its keys: the webhook as it is (no other claim spends its rate tokens or sends its probe meanwhile),
    -- and what the other workers have in flight there, as the claims that held these keys before left it. One whose
    -- URL or owner changed since the walk read it is left for the next claim: its keys are not the ones held.
    SELECT wh.status, wh.consent_state, wh.origin, coalesce(wh.account, '') AS account_key, wh.account, wh.asymmetric_signature,
      wh.url, wh.scheme, wh.headers,
      wh.secret_sealed, wh.previous_secret_sealed, wh.previous_secret_expires_at, wh.rate_limit, wh.rate_tokens,
      wh.rate_refilled_at, wh.breaker_open_until, wh.ordering, wh.ordering_hold_max,
      coalesce(sum((b.by_webhook ->> v_hook)::integer), 0) AS others_webhook,
      coalesce(sum((b.by_origin ->> v_origin)::integer), 0) AS others_origin,
      coalesce(sum((b.by_account ->> v_account)::integer), 0) AS others_account
    INTO w
    FROM webhook wh
      LEFT JOIN webhook_lane_in_flight b ON b.worker <> p_worker AND b.until > v_now
    WHERE wh.id = v_hook
    GROUP BY wh.id;
    IF NOT FOUND OR w.status <> 'active' OR w.consent_state = 'pending' OR w.origin <> v_origin OR w.account_key <> v_account THEN CONTINUE; END IF;

    v_probe := false;
    IF w.breaker_open_until IS NOT NULL THEN
      IF w.breaker_open_until > v_now THEN
        v_wait_ms := least(coalesce(v_wait_ms, 'Infinity'), extract(epoch FROM w.breaker_open_until - v_now) * 1000);
        CONTINUE;
      END IF;
      -- Half open: one probe finds out whether the endpoint is back.
      v_probe := true;
    END IF;
    IF w.rate_limit IS NOT NULL THEN
      -- A token bucket refilled at rate_limit a second that holds a tenth of a second's worth (at least one).
      v_tokens := least(greatest(1, w.rate_limit / 10.0),
        coalesce(w.rate_tokens, 1) + extract(epoch FROM v_now - coalesce(w.rate_refilled_at, v_now)) * w.rate_limit);
      IF v_tokens < 1 THEN
        v_wait_ms := least(coalesce(v_wait_ms, 'Infinity'), (1 - v_tokens) / w.rate_limit * 1000);
        CONTINUE;
      END IF;
    END IF;

    v_origin_room := p_origin_cap - w.others_origin - coalesce((v_own_origin ->> w.origin)::integer, 0);
    v_account_room := p_account_cap - w.others_account - coalesce((v_own_account ->> w.account_key)::integer, 0);
    IF v_origin_room <= 0 THEN v_full_origins := v_full_origins || w.origin; END IF;
    IF v_account_room <= 0 THEN v_full_accounts := v_full_accounts || w.account_key; END IF;
    v_room := least(p_limit - v_taken,
      p_webhook_cap - w.others_webhook - coalesce((v_own_webhook ->> v_hook)::integer, 0),
      v_origin_room, v_account_room);
    -- Room bounded by a cap rather than by what is left of this claim: a slot freed later means more to take.
    v_cap_bound := v_room < p_limit - v_taken;
    IF v_probe THEN v_room := least(v_room, 1); END IF;
    IF w.rate_limit IS NOT NULL THEN
      -- Tokens, not a cap, bound this turn: a freed slot would not let it take more.
      IF floor(v_tokens)::integer <= v_room THEN v_cap_bound := false; END IF;
      v_room := least(v_room, floor(v_tokens)::integer);
    END IF;
    IF v_room <= 0 THEN
      v_capped := true;
      v_held_back := v_held_back + 1;
      CONTINUE;
    END IF;

    -- Due rows no live lease holds, earliest first: the named one, or the webhook's first ones. No row lock ahead
    -- of the update: only a claim holding this webhook's key leases its rows, and the update checks each row again
    -- as it is then (a record or a skip may have changed it meanwhile). The lease is the open row's alone. A webhook
    -- with `resource` ordering has a statement of its own, so that the others' pays nothing for it.
    IF w.ordering = 'resource' THEN
      -- A row an earlier event of its resource holds back is not due yet.
      WITH picked AS (
        SELECT p_only AS dispatch_id WHERE p_only IS NOT NULL
        UNION ALL
        (SELECT p.dispatch_id FROM webhook_dispatch_open p
         WHERE p_only IS NULL AND p.webhook_id = v_hook AND p.next_attempt_at <= v_now
           AND (p.locked_until IS NULL OR p.locked_until < v_now)
           -- hooklane_held_in_order, written out: a function call per row costs more than the test.
           AND (p.order_key IS NULL OR NOT EXISTS (
             SELECT 1 FROM webhook_dispatch_open b
             WHERE b.webhook_id = p.webhook_id AND b.order_key = p.order_key AND b.sequence < p.sequence
               AND (b.failing_since IS NULL OR b.failing_since > v_now - w.ordering_hold_max * interval '1 second')))
         ORDER BY p.next_attempt_at
         LIMIT v_room)
      ),
      leased AS (
        UPDATE webhook_dispatch_open o SET locked_by = p_worker, locked_until = v_until
        FROM picked WHERE o.dispatch_id = picked.dispatch_id AND o.next_attempt_at <= v_now
          AND (o.locked_until IS NULL OR o.locked_until < v_now)
          AND (o.order_key IS NULL OR NOT EXISTS (
            SELECT 1 FROM webhook_dispatch_open b
            WHERE b.webhook_id = o.webhook_id AND b.order_key = o.order_key AND b.sequence < o.sequence
              AND (b.failing_since IS NULL OR b.failing_since > v_now - w.ordering_hold_max * interval '1 second')))
        RETURNING o.dispatch_id, o.next_attempt_at, o.order_key
      ),
      -- An ordered event sent for the first time after earlier ones of its resource that were not delivered
      -- (exhausted, skipped, or still failing past the hold) names them in its body, from then on the body of every
      -- attempt: "ordering":{"skipped":[…]}, the events after the resource's last delivered one.
      flagged AS (
        UPDATE webhook_dispatch d
        SET payload = regexp_replace(d.payload, ',"data":', ',"ordering":{"skipped":' || s.skipped || '},"data":')
        FROM (
          SELECT l.dispatch_id, (
            SELECT json_agg(x.event_id ORDER BY x.sequence)::text FROM webhook_dispatch x
            WHERE x.resource_id = dd.resource_id AND x.webhook_id = v_hook AND x.sequence < dd.sequence
              AND x.status <> 'success'
              AND (x.payload::jsonb -> 'data' ->> 'object') = split_part(l.order_key, ':', 1)
              AND x.sequence > coalesce((
                SELECT max(y.sequence) FROM webhook_dispatch y
                WHERE y.resource_id = dd.resource_id AND y.webhook_id = v_hook AND y.sequence < dd.sequence
                  AND y.status = 'success'
                  AND (y.payload::jsonb -> 'data' ->> 'object') = split_part(l.order_key, ':', 1)), 0)) AS skipped
          FROM leased l JOIN webhook_dispatch dd ON dd.id = l.dispatch_id
          WHERE l.order_key IS NOT NULL AND dd.attempt_count = 0 AND dd.run = 1
            AND position('"ordering":' IN dd.payload) = 0
        ) s
        WHERE d.id = s.dispatch_id AND s.skipped IS NOT NULL
        RETURNING d.id, d.payload
      )
      -- Per webhook: what its attempts need of it, once, and its leased rows.
      SELECT json_build_object(
          'webhook', json_build_object('id', v_hook, 'url', w.url, 'origin', w.origin, 'scheme', w.scheme,
            'headers', nullif(w.headers, '{}'::jsonb), 'asymmetric', w.asymmetric_signature, 'owner', w.account,
            'secretSealed', w.secret_sealed, 'previousSecretSealed', w.previous_secret_sealed,
            'previousSecretExpiresAt', w.previous_secret_expires_at, 'probe', v_probe),
          'rows', json_agg(json_build_object(
            'id', d.id, 'eventId', d.event_id, 'eventType', d.event_type, 'account', d.account,
            'payload', coalesce(f.payload, d.payload), 'attempt', d.attempt_count + 1, 'run', d.run,
            'testMode', d.test_mode, 'ordered', l.order_key IS NOT NULL, 'traceparent', d.traceparent)
            ORDER BY l.next_attempt_at))::text,
        count(*)
      INTO v_got, v_n
      FROM leased l JOIN webhook_dispatch d ON d.id = l.dispatch_id LEFT JOIN flagged f ON f.id = l.dispatch_id;
    ELSE
      WITH picked AS (
        SELECT p_only AS dispatch_id WHERE p_only IS NOT NULL
        UNION ALL
        (SELECT p.dispatch_id FROM webhook_dispatch_open p
         WHERE p_only IS NULL AND p.webhook_id = v_hook AND p.next_attempt_at <= v_now
           AND (p.locked_until IS NULL OR p.locked_until < v_now)
         ORDER BY p.next_attempt_at
         LIMIT v_room)
      ),
      leased AS (
        UPDATE webhook_dispatch_open o SET locked_by = p_worker, locked_until = v_until
        FROM picked WHERE o.dispatch_id = picked.dispatch_id AND o.next_attempt_at <= v_now
          AND (o.locked_until IS NULL OR o.locked_until < v_now)
        RETURNING o.dispatch_id, o.next_attempt_at
      )
      -- Per webhook: what its attempts need of it, once, and its leased rows.
      SELECT json_build_object(
          'webhook', json_build_object('id', v_hook, 'url', w.url, 'origin', w.origin, 'scheme', w.scheme,
            'headers', nullif(w.headers, '{}'::jsonb), 'asymmetric', w.asymmetric_signature, 'owner', w.account,
            'secretSealed', w.secret_sealed, 'previousSecretSealed', w.previous_secret_sealed,
            'previousSecretExpiresAt', w.previous_secret_expires_at, 'probe', v_probe),
          'rows', json_agg(json_build_object(
            'id', d.id, 'eventId', d.event_id, 'eventType', d.event_type, 'account', d.account, 'payload', d.payload,
            'attempt', d.attempt_count + 1, 'run', d.run, 'testMode', d.test_mode, 'traceparent', d.traceparent)
            ORDER BY l.next_attempt_at))::text,
        count(*)
      INTO v_got, v_n
      FROM leased l JOIN webhook_dispatch d ON d.id = l.dispatch_id;
    END IF;
    IF v_n < v_room AND p_only IS NULL THEN
      -- Fewer due rows than room: when does this webhook's next one fall due?
      SELECT min(o.next_attempt_at) INTO v_next FROM webhook_dispatch_open o
      WHERE o.webhook_id = v_hook AND o.next_attempt_at > v_now;
      IF v_next IS NOT NULL THEN
        v_wait_ms := least(coalesce(v_wait_ms, 'Infinity'), extract(epoch FROM v_next - v_now) * 1000);
      END IF;
    END IF;
    CONTINUE WHEN v_n = 0;

    IF v_n = v_room AND v_cap_bound AND NOT v_probe THEN v_capped := true; END IF;
    IF v_n >= v_origin_room THEN v_full_origins := v_full_origins || w.origin; END IF;
    IF v_n >= v_account_room THEN v_full_accounts := v_full_accounts || w.account_key; END IF;
    v_groups := v_groups || v_got;
    v_taken := v_taken + v_n;
    v_held_back := 0;
    v_own_webhook := jsonb_set(v_own_webhook, ARRAY[v_hook],
      to_jsonb(coalesce((v_own_webhook ->> v_hook)::integer, 0) + v_n));
    v_own_origin := jsonb_set(v_own_origin, ARRAY[w.origin],
      to_jsonb(coalesce((v_own_origin ->> w.origin)::integer, 0) + v_n));
    v_own_account := jsonb_set(v_own_account, ARRAY[w.account_key],
      to_jsonb(coalesce((v_own_account ->> w.account_key)::integer, 0) + v_n));
    IF w.rate_limit IS NOT NULL THEN
      v_tokens_left := v_tokens_left || jsonb_build_object(v_hook, v_tokens - v_n);
      IF v_n = v_room AND NOT v_cap_bound THEN
        -- Its tokens ran out this turn: the claim says when the next one is in.
        v_wait_ms := least(coalesce(v_wait_ms, 'Infinity'), greatest(0, 1 - (v_tokens - v_n)) / w.rate_limit * 1000);
      END IF;
    END IF;
    IF v_probe THEN v_probed := v_probed || v_hook; END IF;
  END LOOP;

  -- 3. Rate tokens and probes, written once the walk is over, in id order.
  IF v_tokens_left <> '{}' OR cardinality(v_probed) > 0 THEN
    PERFORM 1 FROM webhook wh
    WHERE wh.id IN (SELECT jsonb_object_keys(v_tokens_left) UNION SELECT unnest(v_probed))
    ORDER BY wh.id
    FOR NO KEY UPDATE;
    -- A probe shuts the breaker to others until it is recorded (or its lease runs out), unless a record
    -- statement closed or opened it again meanwhile.
    UPDATE webhook wh
    SET rate_tokens = coalesce((v_tokens_left ->> wh.id)::double precision, wh.rate_tokens),
        rate_refilled_at = CASE WHEN v_tokens_left ? wh.id THEN v_now ELSE wh.rate_refilled_at END,
        breaker_open_until = CASE WHEN wh.id = ANY (v_probed) AND wh.breaker_open_until <= v_now
                                  THEN v_until ELSE wh.breaker_open_until END
    WHERE wh.id IN (SELECT jsonb_object_keys(v_tokens_left) UNION SELECT unnest(v_probed));
  END IF;

  -- 4. This worker's book row, written only when it changes.
  SELECT b.by_webhook INTO v_book FROM webhook_lane_in_flight b WHERE b.worker = p_worker;
  IF v_own_webhook = '{}' THEN
    IF v_book IS NOT NULL THEN DELETE FROM webhook_lane_in_flight b WHERE b.worker = p_worker; END IF;
  ELSIF v_taken > 0 OR v_book IS DISTINCT FROM v_own_webhook THEN
    INSERT INTO webhook_lane_in_flight AS b (worker, until, by_webhook, by_origin, by_account)
    VALUES (p_worker, v_until, v_own_webhook, v_own_origin, v_own_account)
    ON CONFLICT (worker) DO UPDATE
    SET until = greatest(b.until, excluded.until), by_webhook = excluded.by_webhook,
        by_origin = excluded.by_origin, by_account = excluded.by_account;
  END IF;

  RETURN json_build_object(
    'groups', ('[' || array_to_string(v_groups, ',') || ']')::json,
    'cursor', v_cursor,
    'contended', v_contended,
    'waitMs', CASE
      WHEN v_taken >= p_limit OR NOT v_complete THEN 0
      WHEN v_capped THEN least(coalesce(v_wait_ms, p_recheck_ms), p_recheck_ms)
      WHEN v_wait_ms = 'Infinity' THEN NULL
      ELSE v_wait_ms END);
END;
$$;
