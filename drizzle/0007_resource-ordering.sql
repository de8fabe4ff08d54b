ALTER TABLE "webhook" ADD COLUMN "ordering" text DEFAULT 'none' NOT NULL;--> statement-breakpoint
ALTER TABLE "webhook" ADD COLUMN "ordering_hold_max" integer DEFAULT 3600 NOT NULL;--> statement-breakpoint
ALTER TABLE "webhook_dispatch_open" ADD COLUMN "order_key" text;--> statement-breakpoint
ALTER TABLE "webhook_dispatch_open" ADD COLUMN "sequence" bigint;--> statement-breakpoint
ALTER TABLE "webhook_dispatch_open" ADD COLUMN "failing_since" timestamp with time zone;--> statement-breakpoint
CREATE INDEX CONCURRENTLY "webhook_dispatch_open_order_idx" ON "webhook_dispatch_open" USING btree ("webhook_id","order_key","sequence") WHERE "webhook_dispatch_open"."order_key" is not null;
--> statement-breakpoint
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
--      read sixteen at a time. One not active, not due, or whose origin or account this claim found full or held by
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
-- dispatches; where the next claim starts; when to claim again (0 now, null when nothing is scheduled); and whether
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
      SELECT o.webhook_id, o.next_attempt_at, wh.status = 'active', wh.origin, coalesce(wh.account, '')
      INTO v_hook, v_earliest, v_active, v_origin, v_account
      FROM webhook_dispatch_open o JOIN webhook wh ON wh.id = o.webhook_id WHERE o.dispatch_id = p_only;
      IF NOT FOUND THEN v_complete := true; EXIT; END IF;
    ELSE
      IF v_at >= coalesce(cardinality(v_hooks), 0) THEN
        -- The next webhooks with open rows, each with its earliest (its first entry in the index: a probe each), and
        -- what is needed to pass over one without a lock: whether it is active, its origin and account. Sixteen
        -- first, as most claims fill their room within them; then at once as many as the claim may still visit.
        WITH RECURSIVE next(webhook_id, next_attempt_at, n) AS (
          (SELECT o.webhook_id, o.next_attempt_at, 1 FROM webhook_dispatch_open o WHERE o.webhook_id > v_cursor
           ORDER BY o.webhook_id, o.next_attempt_at LIMIT 1)
          UNION ALL
          SELECT x.webhook_id, x.next_attempt_at, next.n + 1 FROM next CROSS JOIN LATERAL (
            SELECT o.webhook_id, o.next_attempt_at FROM webhook_dispatch_open o WHERE o.webhook_id > next.webhook_id
            ORDER BY o.webhook_id, o.next_attempt_at LIMIT 1) x
          WHERE next.n < CASE WHEN v_steps = 0 THEN least(16, p_max_steps) ELSE p_max_steps - v_steps END
        )
        SELECT array_agg(n.webhook_id ORDER BY n.n), array_agg(n.next_attempt_at ORDER BY n.n),
          array_agg(coalesce(wh.status = 'active', false) ORDER BY n.n), array_agg(wh.origin ORDER BY n.n),
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
    SELECT wh.status, wh.origin, coalesce(wh.account, '') AS account_key, wh.url, wh.scheme, wh.secret_sealed,
      wh.previous_secret_sealed, wh.previous_secret_expires_at, wh.rate_limit, wh.rate_tokens,
      wh.rate_refilled_at, wh.breaker_open_until, wh.ordering, wh.ordering_hold_max,
      coalesce(sum((b.by_webhook ->> v_hook)::integer), 0) AS others_webhook,
      coalesce(sum((b.by_origin ->> v_origin)::integer), 0) AS others_origin,
      coalesce(sum((b.by_account ->> v_account)::integer), 0) AS others_account
    INTO w
    FROM webhook wh
      LEFT JOIN webhook_lane_in_flight b ON b.worker <> p_worker AND b.until > v_now
    WHERE wh.id = v_hook
    GROUP BY wh.id;
    IF NOT FOUND OR w.status <> 'active' OR w.origin <> v_origin OR w.account_key <> v_account THEN CONTINUE; END IF;

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
            'secretSealed', w.secret_sealed, 'previousSecretSealed', w.previous_secret_sealed,
            'previousSecretExpiresAt', w.previous_secret_expires_at, 'probe', v_probe),
          'rows', json_agg(json_build_object(
            'id', d.id, 'eventId', d.event_id, 'eventType', d.event_type, 'account', d.account,
            'payload', coalesce(f.payload, d.payload), 'attempt', d.attempt_count + 1, 'run', d.run,
            'testMode', d.test_mode, 'ordered', l.order_key IS NOT NULL) ORDER BY l.next_attempt_at))::text,
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
            'secretSealed', w.secret_sealed, 'previousSecretSealed', w.previous_secret_sealed,
            'previousSecretExpiresAt', w.previous_secret_expires_at, 'probe', v_probe),
          'rows', json_agg(json_build_object(
            'id', d.id, 'eventId', d.event_id, 'eventType', d.event_type, 'account', d.account, 'payload', d.payload,
            'attempt', d.attempt_count + 1, 'run', d.run, 'testMode', d.test_mode) ORDER BY l.next_attempt_at))::text,
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
--> statement-breakpoint
-- hooklane_held_in_order: whether an open dispatch of a webhook with `resource` ordering must wait for an earlier
-- event of its resource.
--
-- Called by: nextDueDispatch (lib/db/sql/queued-dispatches.ts: the Vercel lane's turn at a webhook).
-- hooklane_claim_dispatches and dispatchState write the same test out, row by row (a call per row costs more than
-- the test); a change here is a change there.
--
-- Locks: none; reads the open rows of the webhook and resource on their index (webhook_dispatch_open_order_idx).
--
-- Steps:
--   1. An open row without an order key (the webhook does not order, or the row was started over) never waits.
--   2. Otherwise it waits while an open row of the same webhook and key with a lower sequence is there and has not
--      been failing for longer than the hold (seconds): one never attempted, in flight, or failing for less.
CREATE OR REPLACE FUNCTION hooklane_held_in_order(
  p_webhook text, p_key text, p_sequence bigint, p_hold_seconds integer, p_now timestamptz
) RETURNS boolean
LANGUAGE sql STABLE
AS $$
  SELECT p_key IS NOT NULL AND EXISTS (
    SELECT 1 FROM webhook_dispatch_open b
    WHERE b.webhook_id = p_webhook AND b.order_key = p_key AND b.sequence < p_sequence
      AND (b.failing_since IS NULL OR b.failing_since > p_now - p_hold_seconds * interval '1 second'))
$$;
--> statement-breakpoint
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
--> statement-breakpoint
-- hooklane_route_events: routes a batch of events, each to every webhook that hears it, in one insert.
--
-- Called by: hooklane_route_and_claim (the postgres lane's step) and insertDispatches
-- (lib/db/sql/insert-dispatches.ts: the route consumer, one event at a time, on every transport).
--
-- Locks: the webhook_sequence rows of the webhooks it routes to (upserted in id order, held to the end of the
-- transaction: routings of one webhook number one after the other); the inserts' unique keys (event_id, webhook_id)
-- and (webhook_id, sequence), and their foreign key to the webhook.
--
-- Steps:
--   1. Each message's owner: the account the publisher read in the mutation's transaction (`account`), or for a
--      message without one, the owner of its resource now (hooklane_event_owner). Its thin body, built here as
--      JSON.stringify builds it (buildEventBody's bytes, which a test holds it to), in two halves around `sequence`.
--   2. Each event's webhooks: global ones always, an account's only for its own events; paused and disabled
--      ones too (their events are kept); none for a type that is deprecated or was never synced. An event named
--      twice in the batch counts once per webhook, for its first message.
--   3. The pairs with no dispatch yet: a redelivered message inserts nothing and takes no number.
--   4. Each webhook's next numbers, taken from its webhook_sequence row by one upsert whose RETURNING holds the
--      value after any routing that committed while this one waited for the row: the pairs are numbered per
--      webhook in batch order up to it, never twice and never skipping one. Only when the same event is routed
--      twice at the same moment does the later insert meet the earlier one's key: it fails, numbers and all, and
--      its message is routed again later, finding the dispatch made.
--   5. One pending dispatch per pair, its number in its body, and its open row, due now; for a webhook with
--      `resource` ordering the open row also carries the resource (`<object>:<id>`) and the sequence, which the
--      claim orders by (hooklane_held_in_order). Each dispatch is written once, in the state it is delivered from.
--   6. A listen session that got one is told on channel hooklane_listen (payload: its webhook id, once per
--      transaction), so only that session's streams wake (lib/db/sql/listen-wake.ts).
-- Returns the new dispatches' ids (in the batch's order) and, per message, how many it created.
CREATE OR REPLACE FUNCTION hooklane_route_events(
  p_messages jsonb[], p_rules jsonb[], OUT ids text[], OUT routed integer[]
)
LANGUAGE plpgsql
SET enable_seqscan = off
SET jit = off
SET enable_hashjoin = off
SET enable_mergejoin = off
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
  v_woken integer;
BEGIN
  -- 1, 2. The batch's pairs.
  WITH e AS MATERIALIZED (
    SELECT x.ord, x.message ->> 'eventId' AS event_id, x.message ->> 'type' AS type, x.account,
      (x.rule ->> 'object') || ':' || (x.message ->> 'resourceId') AS resource_key,
      -- JSON.stringify's bytes: keys in this order, no spaces; to_json escapes text as it does.
      '{"id":' || to_json(x.message ->> 'eventId')::text
        || ',"object":"event"'
        || ',"type":' || to_json(x.message ->> 'type')::text
        || ',"created":' || to_json(x.message ->> 'occurredAt')::text
        || ',"livemode":' || (x.message -> 'livemode')::text AS head,
      ',"data":{"object":' || to_json(x.rule ->> 'object')::text
        || ',"id":' || to_json(x.message ->> 'resourceId')::text
        || ',"account":' || coalesce(to_json(x.account)::text, 'null') || '}}' AS tail
    FROM (
      SELECT m.ord, m.message, m.rule,
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
    SELECT DISTINCT ON (e.event_id, w.id) e.ord, w.id AS webhook_id, e.event_id, e.type, e.account, e.head, e.tail,
      w.status = 'listening' AS listening, CASE WHEN w.ordering = 'resource' THEN e.resource_key END AS order_key
    FROM e JOIN webhook w
      ON (w.events @> ARRAY[e.type]::text[] OR w.events @> ARRAY['*']::text[])
      AND (w.account IS NULL OR w.account = e.account)
    WHERE w.deleted_at IS NULL
      AND EXISTS (SELECT 1 FROM webhook_event_type t WHERE t.internal = e.type AND NOT t.deprecated)
    ORDER BY e.event_id, w.id, e.ord
  ),
  -- 3. The pairs with no dispatch yet.
  fresh AS MATERIALIZED (
    SELECT p.* FROM pairs p
    -- On the unique key (event_id, webhook_id), by the event: the webhook's column is kept out of the index choice,
    -- or a generic plan may walk the webhook's whole log instead.
    WHERE NOT EXISTS (
      SELECT 1 FROM webhook_dispatch d WHERE d.event_id = p.event_id AND (d.webhook_id || '') = p.webhook_id)
  ),
  -- 4. Each webhook's numbers, its row locked (in id order) until this transaction ends.
  bumped AS (
    INSERT INTO webhook_sequence AS s (webhook_id, last)
    SELECT f.webhook_id, count(*) FROM fresh f GROUP BY f.webhook_id ORDER BY f.webhook_id
    ON CONFLICT (webhook_id) DO UPDATE SET last = s.last + excluded.last
    RETURNING s.webhook_id, s.last
  ),
  -- Each pair's dispatch id made here, as the column's default makes it, so that both inserts and the answer read
  -- the pairs themselves (no join of the new rows back to them).
  numbered AS MATERIALIZED (
    SELECT f.*, 'wd_' || replace(gen_random_uuid()::text, '-', '') AS id,
      b.last - count(*) OVER (PARTITION BY f.webhook_id)
        + row_number() OVER (PARTITION BY f.webhook_id ORDER BY f.ord) AS sequence
    FROM fresh f JOIN bumped b ON b.webhook_id = f.webhook_id
  ),
  -- 5. The dispatches and their open rows.
  inserted AS (
    INSERT INTO webhook_dispatch (id, event_id, event_type, webhook_id, account, sequence, payload, next_attempt_at)
    SELECT n.id, n.event_id, n.type, n.webhook_id, n.account, n.sequence,
      n.head || ',"sequence":' || n.sequence || n.tail, now()
    FROM numbered n
    ORDER BY n.ord, n.webhook_id
  ),
  opened AS (
    INSERT INTO webhook_dispatch_open (dispatch_id, webhook_id, next_attempt_at, order_key, sequence)
    SELECT n.id, n.webhook_id, now(), n.order_key, CASE WHEN n.order_key IS NOT NULL THEN n.sequence END
    FROM numbered n
  ),
  woken AS (
    SELECT pg_notify('hooklane_listen', l.webhook_id)
    FROM (SELECT DISTINCT n.webhook_id FROM numbered n WHERE n.listening) l
  ),
  owned AS (SELECT n.id, n.ord FROM numbered n)
  SELECT
    (SELECT coalesce(array_agg(o.id ORDER BY o.ord, o.id), '{}'::text[]) FROM owned o),
    (SELECT array_agg(coalesce(c.n, 0)::integer ORDER BY m.ord)
       FROM generate_series(1, cardinality(p_messages)) AS m(ord)
       LEFT JOIN (SELECT o.ord, count(*) AS n FROM owned o GROUP BY o.ord) c ON c.ord = m.ord),
    (SELECT count(*) FROM woken)
  INTO ids, routed, v_woken;
END;
$$;
