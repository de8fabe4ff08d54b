CREATE TABLE "account" (
	"id" text PRIMARY KEY DEFAULT 'acc_' || replace(gen_random_uuid()::text, '-', '') NOT NULL,
	"name" text NOT NULL,
	"email" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "audit_log" (
	"id" text PRIMARY KEY DEFAULT 'aud_' || replace(gen_random_uuid()::text, '-', '') NOT NULL,
	"account" text,
	"actor_sub" text NOT NULL,
	"actor_account" text NOT NULL,
	"actor_role" text,
	"action" text NOT NULL,
	"target" text NOT NULL,
	"detail" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "general_address" (
	"id" text PRIMARY KEY DEFAULT 'addr_' || replace(gen_random_uuid()::text, '-', '') NOT NULL,
	"line1" text NOT NULL,
	"city" text NOT NULL,
	"country" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "idempotency_key" (
	"account" text NOT NULL,
	"key" text NOT NULL,
	"fingerprint" text NOT NULL,
	"status" integer NOT NULL,
	"content_type" text,
	"body" text NOT NULL,
	"sealed" boolean DEFAULT false NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	CONSTRAINT "idempotency_key_account_key_pk" PRIMARY KEY("account","key")
);
--> statement-breakpoint
CREATE TABLE "payment_debt" (
	"id" text PRIMARY KEY DEFAULT 'pd_' || replace(gen_random_uuid()::text, '-', '') NOT NULL,
	"account" text NOT NULL,
	"amount" numeric(14, 2) NOT NULL,
	"currency" text NOT NULL,
	"status" text DEFAULT 'open' NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "subscription" (
	"id" text PRIMARY KEY DEFAULT 'sub_' || replace(gen_random_uuid()::text, '-', '') NOT NULL,
	"account" text NOT NULL,
	"plan" text NOT NULL,
	"status" text DEFAULT 'active' NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "subscription_history" (
	"id" text PRIMARY KEY DEFAULT 'sh_' || replace(gen_random_uuid()::text, '-', '') NOT NULL,
	"subscription" text NOT NULL,
	"change" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "webhook" (
	"id" text PRIMARY KEY DEFAULT 'wh_' || replace(gen_random_uuid()::text, '-', '') NOT NULL,
	"account" text,
	"url" text NOT NULL,
	"origin" text GENERATED ALWAYS AS (coalesce(lower(substring(url from '^[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*')), url)) STORED NOT NULL,
	"events" text[] NOT NULL,
	"status" text DEFAULT 'active' NOT NULL,
	"scheme" text DEFAULT 'hooklane-v1' NOT NULL,
	"description" text DEFAULT '' NOT NULL,
	"secret_sealed" text NOT NULL,
	"previous_secret_sealed" text,
	"previous_secret_expires_at" timestamp with time zone,
	"disabled_reason" text,
	"rate_limit" integer,
	"rate_tokens" double precision,
	"rate_refilled_at" timestamp with time zone,
	"breaker_failures" integer DEFAULT 0 NOT NULL,
	"breaker_opens" integer DEFAULT 0 NOT NULL,
	"breaker_open_until" timestamp with time zone,
	"status_changed_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone,
	"held_event_max_age" integer,
	"deleted_at" timestamp with time zone,
	"deleted_by" text,
	"created_by" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "webhook_attempt" (
	"dispatch_id" text NOT NULL,
	"run" integer DEFAULT 1 NOT NULL,
	"attempt" integer NOT NULL,
	"started_at" timestamp with time zone NOT NULL,
	"duration_ms" integer NOT NULL,
	"outcome" text NOT NULL,
	"status_code" integer,
	"error_class" text,
	"error_message" text,
	"response_excerpt" text,
	"signature" jsonb NOT NULL,
	"worker" text NOT NULL,
	"next_attempt_at" timestamp with time zone,
	CONSTRAINT "webhook_attempt_dispatch_id_run_attempt_pk" PRIMARY KEY("dispatch_id","run","attempt")
);
--> statement-breakpoint
CREATE TABLE "webhook_dispatch" (
	"id" text PRIMARY KEY DEFAULT 'wd_' || replace(gen_random_uuid()::text, '-', '') NOT NULL,
	"event_id" text NOT NULL,
	"event_type" text NOT NULL,
	"webhook_id" text NOT NULL,
	"account" text,
	"payload" text NOT NULL,
	"resource_id" text GENERATED ALWAYS AS (((payload)::jsonb -> 'data' ->> 'id')) STORED,
	"status" text DEFAULT 'pending' NOT NULL,
	"attempt_count" integer DEFAULT 0 NOT NULL,
	"run" integer DEFAULT 1 NOT NULL,
	"recovery_id" text,
	"next_attempt_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_status_code" integer,
	"last_error" text,
	"test_mode" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"completed_at" timestamp with time zone,
	CONSTRAINT "webhook_dispatch_test_mode_check" CHECK ("webhook_dispatch"."test_mode" is null or "webhook_dispatch"."event_type" = 'webhook.test')
);
--> statement-breakpoint
CREATE TABLE "webhook_dispatch_open" (
	"dispatch_id" text PRIMARY KEY NOT NULL,
	"webhook_id" text NOT NULL,
	"next_attempt_at" timestamp with time zone DEFAULT now() NOT NULL,
	"locked_until" timestamp with time zone,
	"locked_by" text,
	"queued_until" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "webhook_event_type" (
	"internal" text PRIMARY KEY NOT NULL,
	"method" text NOT NULL,
	"route" text NOT NULL,
	"resource" text NOT NULL,
	"owner_kind" text NOT NULL,
	"description" text NOT NULL,
	"example" json NOT NULL,
	"since" text NOT NULL,
	"deprecated" boolean DEFAULT false NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "webhook_health" (
	"webhook_id" text PRIMARY KEY NOT NULL,
	"failures_in_a_row" integer DEFAULT 0 NOT NULL,
	"last_attempt_at" timestamp with time zone NOT NULL,
	"last_success_at" timestamp with time zone,
	"last_failure_at" timestamp with time zone,
	"last_error" text,
	"last_status_code" integer
);
--> statement-breakpoint
CREATE TABLE "webhook_health_hour" (
	"webhook_id" text NOT NULL,
	"hour" timestamp with time zone NOT NULL,
	"bucket" smallint NOT NULL,
	"attempts" integer NOT NULL,
	"succeeded" integer NOT NULL,
	CONSTRAINT "webhook_health_hour_webhook_id_hour_bucket_pk" PRIMARY KEY("webhook_id","hour","bucket")
);
--> statement-breakpoint
CREATE TABLE "webhook_lane_in_flight" (
	"worker" text PRIMARY KEY NOT NULL,
	"until" timestamp with time zone NOT NULL,
	"by_webhook" jsonb NOT NULL,
	"by_origin" jsonb NOT NULL,
	"by_account" jsonb NOT NULL
);
--> statement-breakpoint
CREATE TABLE "webhook_lane_minute" (
	"minute" timestamp with time zone NOT NULL,
	"shard" smallint DEFAULT 0 NOT NULL,
	"attempts" integer NOT NULL,
	"succeeded" integer NOT NULL,
	CONSTRAINT "webhook_lane_minute_minute_shard_pk" PRIMARY KEY("minute","shard")
);
--> statement-breakpoint
CREATE TABLE "webhook_notification" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"webhook_id" text NOT NULL,
	"account" text,
	"kind" text NOT NULL,
	"detail" jsonb NOT NULL,
	"mail_status" text DEFAULT 'pending' NOT NULL,
	"mail_attempts" integer DEFAULT 0 NOT NULL,
	"next_mail_at" timestamp with time zone DEFAULT now() NOT NULL,
	"mailed_at" timestamp with time zone,
	"mail_error" text,
	"digest_id" bigint,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "webhook_poison_message" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"topic" text NOT NULL,
	"message" jsonb,
	"error" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "webhook_recovery" (
	"id" text PRIMARY KEY DEFAULT 'whr_' || replace(gen_random_uuid()::text, '-', '') NOT NULL,
	"kind" text DEFAULT 'recover' NOT NULL,
	"webhook_id" text,
	"account" text,
	"event_type" text,
	"since" timestamp with time zone NOT NULL,
	"until" timestamp with time zone NOT NULL,
	"status" text DEFAULT 'pending' NOT NULL,
	"total" integer,
	"requeued" integer DEFAULT 0 NOT NULL,
	"cursor_created_at" timestamp with time zone,
	"cursor_id" text,
	"locked_until" timestamp with time zone,
	"locked_by" text,
	"turn_at" timestamp with time zone,
	"created_by" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"started_at" timestamp with time zone,
	"completed_at" timestamp with time zone,
	CONSTRAINT "webhook_recovery_kind_check" CHECK (("webhook_recovery"."kind" = 'recover' and "webhook_recovery"."webhook_id" is not null) or ("webhook_recovery"."kind" = 'resend' and "webhook_recovery"."event_type" is not null))
);
--> statement-breakpoint
CREATE TABLE "webhook_route_job" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"message" jsonb NOT NULL,
	"run_at" timestamp with time zone DEFAULT now() NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"locked_until" timestamp with time zone,
	"locked_by" text,
	"last_error" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "webhook_worker" (
	"id" text PRIMARY KEY NOT NULL,
	"started_at" timestamp with time zone DEFAULT now() NOT NULL,
	"heartbeat_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_claim_at" timestamp with time zone,
	"in_flight" integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
ALTER TABLE "payment_debt" ADD CONSTRAINT "payment_debt_account_account_id_fk" FOREIGN KEY ("account") REFERENCES "public"."account"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "subscription" ADD CONSTRAINT "subscription_account_account_id_fk" FOREIGN KEY ("account") REFERENCES "public"."account"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "subscription_history" ADD CONSTRAINT "subscription_history_subscription_subscription_id_fk" FOREIGN KEY ("subscription") REFERENCES "public"."subscription"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "webhook_dispatch" ADD CONSTRAINT "webhook_dispatch_webhook_id_webhook_id_fk" FOREIGN KEY ("webhook_id") REFERENCES "public"."webhook"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "webhook_health" ADD CONSTRAINT "webhook_health_webhook_id_webhook_id_fk" FOREIGN KEY ("webhook_id") REFERENCES "public"."webhook"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "webhook_health_hour" ADD CONSTRAINT "webhook_health_hour_webhook_id_webhook_id_fk" FOREIGN KEY ("webhook_id") REFERENCES "public"."webhook"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "webhook_notification" ADD CONSTRAINT "webhook_notification_webhook_id_webhook_id_fk" FOREIGN KEY ("webhook_id") REFERENCES "public"."webhook"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "webhook_recovery" ADD CONSTRAINT "webhook_recovery_webhook_id_webhook_id_fk" FOREIGN KEY ("webhook_id") REFERENCES "public"."webhook"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "audit_log_account_created_idx" ON "audit_log" USING btree ("account","created_at");--> statement-breakpoint
CREATE INDEX "audit_log_target_idx" ON "audit_log" USING btree ("target");--> statement-breakpoint
CREATE INDEX "idempotency_key_expires_idx" ON "idempotency_key" USING btree ("expires_at");--> statement-breakpoint
CREATE INDEX "payment_debt_account_idx" ON "payment_debt" USING btree ("account");--> statement-breakpoint
CREATE INDEX "subscription_account_idx" ON "subscription" USING btree ("account");--> statement-breakpoint
CREATE INDEX "subscription_history_subscription_idx" ON "subscription_history" USING btree ("subscription");--> statement-breakpoint
CREATE INDEX "webhook_account_idx" ON "webhook" USING btree ("account");--> statement-breakpoint
CREATE INDEX "webhook_deleted_idx" ON "webhook" USING btree ("deleted_at") WHERE "webhook"."deleted_at" is not null;--> statement-breakpoint
CREATE INDEX "webhook_events_idx" ON "webhook" USING gin ("events");--> statement-breakpoint
CREATE INDEX "webhook_expires_idx" ON "webhook" USING btree ("expires_at") WHERE "webhook"."expires_at" is not null;--> statement-breakpoint
CREATE INDEX "webhook_attempt_started_idx" ON "webhook_attempt" USING brin ("started_at") WITH (autosummarize=true);--> statement-breakpoint
CREATE UNIQUE INDEX "webhook_dispatch_event_webhook_key" ON "webhook_dispatch" USING btree ("event_id","webhook_id");--> statement-breakpoint
CREATE INDEX "webhook_dispatch_webhook_created_idx" ON "webhook_dispatch" USING btree ("webhook_id","created_at");--> statement-breakpoint
CREATE INDEX "webhook_dispatch_resource_idx" ON "webhook_dispatch" USING btree ("resource_id");--> statement-breakpoint
CREATE INDEX "webhook_dispatch_type_created_idx" ON "webhook_dispatch" USING btree ("event_type","created_at");--> statement-breakpoint
CREATE INDEX "webhook_dispatch_recovery_idx" ON "webhook_dispatch" USING btree ("recovery_id") WHERE "webhook_dispatch"."recovery_id" is not null;--> statement-breakpoint
CREATE INDEX "webhook_dispatch_open_webhook_due_idx" ON "webhook_dispatch_open" USING btree ("webhook_id","next_attempt_at");--> statement-breakpoint
CREATE INDEX "webhook_health_hour_hour_idx" ON "webhook_health_hour" USING btree ("hour");--> statement-breakpoint
CREATE INDEX "webhook_notification_webhook_idx" ON "webhook_notification" USING btree ("webhook_id");--> statement-breakpoint
CREATE INDEX "webhook_notification_account_idx" ON "webhook_notification" USING btree ("account","id");--> statement-breakpoint
CREATE INDEX "webhook_notification_mail_due_idx" ON "webhook_notification" USING btree ("next_mail_at") WHERE "webhook_notification"."mail_status" = 'pending';--> statement-breakpoint
CREATE INDEX "webhook_notification_undigested_idx" ON "webhook_notification" USING btree ("webhook_id","created_at") WHERE "webhook_notification"."kind" = 'dispatch.exhausted' and "webhook_notification"."digest_id" is null;--> statement-breakpoint
CREATE INDEX "webhook_recovery_webhook_idx" ON "webhook_recovery" USING btree ("webhook_id");--> statement-breakpoint
CREATE INDEX "webhook_recovery_open_idx" ON "webhook_recovery" USING btree ("created_at") WHERE "webhook_recovery"."status" <> 'completed';--> statement-breakpoint
CREATE INDEX "webhook_route_job_run_at_idx" ON "webhook_route_job" USING btree ("run_at");
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
-- locks them). Its own row of webhook_lane_in_flight.
--
-- Steps:
--   1. What this worker has running (p_held, per webhook), per origin and account as the webhooks are now; and the
--      origins and accounts the book says are at their cap (a hint, read without their keys).
--   2. The walk: webhooks with open rows in id order after p_after (round-robin; wraps once), at most p_max_steps,
--      read sixteen at a time. One not active, not due, or whose origin or account this claim found full or held by
--      another claim is passed over at once. At each other: its key locks; the webhook as it is now (breaker? rate
--      tokens?); then, in a statement of its own (so it sees every claim that held those locks before),
--      what the other workers' book rows say is in flight there. Its room is what the three caps leave, then at
--      most one for a breaker's probe and the rate tokens. It leases that many due open rows, earliest first.
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
      wh.rate_refilled_at, wh.breaker_open_until,
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
    -- as it is then (a record or a skip may have changed it meanwhile). The lease is the open row's alone.
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
-- hooklane_dispatch_gone: when dispatches are deleted, their open rows and attempts go with them.
--
-- Called by: the trigger webhook_dispatch_gone, once per statement that deletes dispatches (retention, a listen
-- session ended, a webhook's cascade). Neither table has a foreign key to webhook_dispatch: a key's check per
-- row cost every route insert and every attempt recorded a lookup of the dispatch.
--
-- Locks: the open rows and attempts it deletes.
--
-- Steps: by the deleted ids, through webhook_dispatch_open's and webhook_attempt's keys, whatever their number.
CREATE OR REPLACE FUNCTION hooklane_dispatch_gone() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
  DELETE FROM webhook_dispatch_open o WHERE o.dispatch_id = ANY (ARRAY(SELECT g.id FROM gone g));
  DELETE FROM webhook_attempt a WHERE a.dispatch_id = ANY (ARRAY(SELECT g.id FROM gone g));
  RETURN NULL;
END;
$$;
--> statement-breakpoint
CREATE OR REPLACE TRIGGER webhook_dispatch_gone
AFTER DELETE ON webhook_dispatch
REFERENCING OLD TABLE AS gone
FOR EACH STATEMENT EXECUTE FUNCTION hooklane_dispatch_gone();
--> statement-breakpoint
-- hooklane_event_owner: the account that owns a resource now, by the catalogue's owner strategy.
--
-- Called by: hooklane_route_events, for a route message published without its owner (the publisher reads the owner
-- in the mutation's transaction and sends it in the message; this is for a message that lacks it).
--
-- Locks: none.
--
-- Steps: `self`, the resource id is the account; `none`, no account; `direct`, the row's column; `via`, the column
-- of the row its reference points at. Table and column names come from the reviewed catalogue, checked against
-- the schema when the catalogue is read, and are quoted as identifiers. A row that is gone has no owner (null).
CREATE OR REPLACE FUNCTION hooklane_event_owner(p_owner jsonb, p_resource text) RETURNS text
LANGUAGE plpgsql
STABLE
AS $$
DECLARE
  v_account text;
BEGIN
  CASE p_owner ->> 'kind'
    WHEN 'self' THEN v_account := p_resource;
    WHEN 'none' THEN v_account := NULL;
    WHEN 'direct' THEN
      EXECUTE format('SELECT %I::text FROM %I WHERE id = $1', p_owner ->> 'column', p_owner ->> 'table')
        INTO v_account USING p_resource;
    WHEN 'via' THEN
      EXECUTE format('SELECT p.%I::text FROM %I t JOIN %I p ON p.id = t.%I WHERE t.id = $1',
        p_owner ->> 'column', p_owner ->> 'table', p_owner ->> 'parentTable', p_owner ->> 'reference')
        INTO v_account USING p_resource;
    ELSE
      RAISE EXCEPTION 'unknown owner strategy %', p_owner ->> 'kind';
  END CASE;
  RETURN v_account;
END;
$$;
--> statement-breakpoint
-- hooklane_latency_bucket: an attempt's duration bucket in the health rollups' geometric histogram.
--
-- Called by: hooklane_record_attempts (webhook_health_hour's bucket); LATENCY_BUCKETS
-- (lib/db/sql/latency-histogram.ts) reads the buckets back with the same ratio, which a test holds them to.
--
-- Locks: none.
--
-- Steps: bucket 0 holds attempts under 1 ms; bucket n ≥ 1 those from 1.15^(n−1) ms (0.13976… is ln 1.15), each 15 %
-- wider than the one before, up to bucket 79 (about 60 s and beyond).
CREATE OR REPLACE FUNCTION hooklane_latency_bucket(p_ms integer) RETURNS integer
LANGUAGE sql
IMMUTABLE PARALLEL SAFE
AS $$
  SELECT CASE WHEN p_ms < 1 THEN 0 ELSE least(79, floor(ln(p_ms::float8) / 0.13976194237515863::float8)::int + 1) END
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
--      retry can only come later than planned.
--   2. The ledger row of each of those: status, attempt count, next attempt, last answer. No index reads these
--      columns, so the update is heap-only where its page has room.
--   3. Exhausted dispatches' owner notifications (the sweeper folds them into digests).
--   4. The attempts, of the dispatch's current run, for the rows updated in 2 or still there (a lease that ran
--      out: the attempt was made, and is recorded once).
--   5. Endpoint health from the attempts inserted: the webhook's state now, per hour and duration bucket, and the
--      lane's attempts per minute (in one of sixteen rows a minute, by worker).
--   6. Circuit breakers: any HTTP answer closes one; connection-level failures (p_connection_classes) count, and
--      at p_threshold it opens for a backoff that doubles with each consecutive opening, up to p_open_max_ms.
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
      response_excerpt text, signature jsonb, probe boolean)
  ),
  -- 1. The open rows this worker still holds.
  closed AS (
    DELETE FROM webhook_dispatch_open o USING r
    WHERE o.dispatch_id = ANY (v_ids) AND o.dispatch_id = r.id AND o.locked_by = p_worker AND r.status <> 'error'
    RETURNING o.dispatch_id
  ),
  reopened AS (
    UPDATE webhook_dispatch_open o
    SET next_attempt_at = r.next_at, locked_until = NULL, locked_by = NULL
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
    WHERE w.id = ANY (v_hooks) AND c.status = 'exhausted'
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
    FROM attempts a JOIN (SELECT DISTINCT id, webhook_id FROM r) w ON w.id = a.dispatch_id
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
    FROM recorded HAVING count(*) > 0
    ON CONFLICT (minute, shard) DO UPDATE
    SET attempts = m.attempts + excluded.attempts, succeeded = m.succeeded + excluded.succeeded
  ),
  -- 6. Circuit breakers. Per webhook: did the endpoint answer at all, and how many connection-level failures.
  outcomes AS (
    SELECT r.webhook_id, bool_or(r.status_code IS NOT NULL) AS reachable, bool_or(r.probe) AS probed,
      count(*) FILTER (WHERE r.error_class = ANY (p_connection_classes)) AS failures
    FROM r GROUP BY r.webhook_id
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
-- hooklane_route_and_claim: the postgres lane's step, in one statement and one transaction: route the due
-- route jobs, then claim due dispatches for the worker's free slots.
--
-- Called by: routeAndClaim (lib/db/sql/route-and-claim.ts), the postgres lane's loop.
--
-- Locks: the route jobs it takes, FOR UPDATE SKIP LOCKED; then what hooklane_route_events and
-- hooklane_claim_dispatches take.
--
-- Steps:
--   1. Up to p_route_limit due route jobs no live lease holds, oldest first. A message in the shape the route
--      message's schema accepts, of a type with a rule in p_rules, is routed here; any other is leased to this
--      worker (p_route_lease_ms) and handed back, for the shared consumer to record as poison or retry.
--   2. The routed ones in one insert (hooklane_route_events), then deleted: the event's dispatches exist, so its
--      message has done its work.
--   3. With p_claim_limit > 0, the claim (hooklane_claim_dispatches) from p_after, under the same caps as every
--      claim: the new dispatches among whatever else is due, in turn.
-- Returns {found, routed, dispatches, claim, left, dueMs}: the jobs taken, per routed job the dispatches it made,
-- the dispatches made in all, the claim's answer (null when none was made), the jobs handed back, and when the
-- next route job no lease holds is due (0 when this step took a full batch; null when none waits).
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
BEGIN
  -- Lost in a crash, this transaction's work is done again (at-least-once): no need to wait for the disk.
  PERFORM set_config('synchronous_commit', 'off', true);
  -- 1. Due route jobs, checked as the route message's schema checks them.
  FOR j IN
    SELECT r.id, r.message, r.attempts FROM webhook_route_job r
    WHERE r.run_at <= now() AND (r.locked_until IS NULL OR r.locked_until < now())
    ORDER BY r.run_at, r.id
    LIMIT p_route_limit
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
    ELSE
      UPDATE webhook_route_job r
      SET locked_until = now() + p_route_lease_ms * interval '1 millisecond', locked_by = p_worker,
          attempts = r.attempts + 1
      WHERE r.id = j.id;
      v_left := v_left || jsonb_build_object('id', j.id, 'message', j.message::text, 'attempts', j.attempts + 1);
    END IF;
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
    'dueMs', v_due_ms);
END;
$$;
--> statement-breakpoint
-- hooklane_route_events: routes a batch of events, each to every webhook that hears it, in one insert.
--
-- Called by: hooklane_route_and_claim (the postgres lane's step) and insertDispatches
-- (lib/db/sql/insert-dispatches.ts: the route consumer, one event at a time, on every transport).
--
-- Locks: none of its own; the inserts' unique key (event_id, webhook_id) and their foreign key to the webhook.
--
-- Steps:
--   1. Each message's owner: the account the publisher read in the mutation's transaction (`account`), or for a
--      message without one, the owner of its resource now (hooklane_event_owner). Its thin body, built here as
--      JSON.stringify builds it (buildEventBody's bytes, which a test holds it to).
--   2. Each event's webhooks: global ones always, an account's only for its own events; paused and disabled
--      ones too (their events are kept); none for a type that is deprecated or was never synced.
--   3. One pending dispatch per event x webhook (a redelivered message inserts nothing: unique key) and its open
--      row, due now. Each dispatch is written once, in the state it is delivered from.
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
  inserted AS (
    INSERT INTO webhook_dispatch (event_id, event_type, webhook_id, account, payload)
    SELECT p.event_id, p.type, p.webhook_id, p.account, p.payload FROM pairs p
    ORDER BY p.ord, p.webhook_id
    ON CONFLICT (event_id, webhook_id) DO NOTHING
    RETURNING id, event_id, webhook_id, payload, next_attempt_at
  ),
  opened AS (
    INSERT INTO webhook_dispatch_open (dispatch_id, webhook_id, next_attempt_at)
    SELECT i.id, i.webhook_id, i.next_attempt_at FROM inserted i
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
ALTER TABLE "webhook_dispatch" SET (fillfactor = 60, autovacuum_analyze_scale_factor = 0.01, autovacuum_analyze_threshold = 1000, autovacuum_vacuum_scale_factor = 0.05);
--> statement-breakpoint
ALTER TABLE "webhook_dispatch_open" SET (fillfactor = 70, autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 5000, autovacuum_analyze_scale_factor = 0, autovacuum_analyze_threshold = 5000);
