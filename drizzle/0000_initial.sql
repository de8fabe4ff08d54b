CREATE TABLE "account" (
	"id" text PRIMARY KEY DEFAULT 'acc_' || replace(gen_random_uuid()::text, '-', '') NOT NULL,
	"name" text NOT NULL,
	"email" text,
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
	"events" text[] NOT NULL,
	"status" text DEFAULT 'active' NOT NULL,
	"scheme" text DEFAULT 'hooklane-v1' NOT NULL,
	"description" text DEFAULT '' NOT NULL,
	"secret_sealed" text NOT NULL,
	"previous_secret_sealed" text,
	"previous_secret_expires_at" timestamp with time zone,
	"disabled_reason" text,
	"status_changed_at" timestamp with time zone DEFAULT now() NOT NULL,
	"created_by" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "webhook_attempt" (
	"id" bigserial PRIMARY KEY NOT NULL,
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
	"next_attempt_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "webhook_dispatch" (
	"id" text PRIMARY KEY DEFAULT 'wd_' || replace(gen_random_uuid()::text, '-', '') NOT NULL,
	"event_id" text NOT NULL,
	"event_type" text NOT NULL,
	"webhook_id" text NOT NULL,
	"account" text,
	"payload" text NOT NULL,
	"status" text DEFAULT 'pending' NOT NULL,
	"attempt_count" integer DEFAULT 0 NOT NULL,
	"run" integer DEFAULT 1 NOT NULL,
	"recovery_id" text,
	"next_attempt_at" timestamp with time zone DEFAULT now() NOT NULL,
	"locked_until" timestamp with time zone,
	"locked_by" text,
	"queued_until" timestamp with time zone,
	"last_status_code" integer,
	"last_error" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"completed_at" timestamp with time zone
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
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "webhook_notification" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"webhook_id" text NOT NULL,
	"account" text,
	"kind" text NOT NULL,
	"detail" jsonb NOT NULL,
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
	"webhook_id" text NOT NULL,
	"since" timestamp with time zone NOT NULL,
	"until" timestamp with time zone NOT NULL,
	"status" text DEFAULT 'pending' NOT NULL,
	"total" integer,
	"requeued" integer DEFAULT 0 NOT NULL,
	"cursor_created_at" timestamp with time zone,
	"cursor_id" text,
	"locked_until" timestamp with time zone,
	"locked_by" text,
	"created_by" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"started_at" timestamp with time zone,
	"completed_at" timestamp with time zone
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
ALTER TABLE "payment_debt" ADD CONSTRAINT "payment_debt_account_account_id_fk" FOREIGN KEY ("account") REFERENCES "public"."account"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "subscription" ADD CONSTRAINT "subscription_account_account_id_fk" FOREIGN KEY ("account") REFERENCES "public"."account"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "subscription_history" ADD CONSTRAINT "subscription_history_subscription_subscription_id_fk" FOREIGN KEY ("subscription") REFERENCES "public"."subscription"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "webhook_attempt" ADD CONSTRAINT "webhook_attempt_dispatch_id_webhook_dispatch_id_fk" FOREIGN KEY ("dispatch_id") REFERENCES "public"."webhook_dispatch"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "webhook_dispatch" ADD CONSTRAINT "webhook_dispatch_webhook_id_webhook_id_fk" FOREIGN KEY ("webhook_id") REFERENCES "public"."webhook"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "webhook_notification" ADD CONSTRAINT "webhook_notification_webhook_id_webhook_id_fk" FOREIGN KEY ("webhook_id") REFERENCES "public"."webhook"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "webhook_recovery" ADD CONSTRAINT "webhook_recovery_webhook_id_webhook_id_fk" FOREIGN KEY ("webhook_id") REFERENCES "public"."webhook"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "payment_debt_account_idx" ON "payment_debt" USING btree ("account");--> statement-breakpoint
CREATE INDEX "subscription_account_idx" ON "subscription" USING btree ("account");--> statement-breakpoint
CREATE INDEX "subscription_history_subscription_idx" ON "subscription_history" USING btree ("subscription");--> statement-breakpoint
CREATE INDEX "webhook_account_idx" ON "webhook" USING btree ("account");--> statement-breakpoint
CREATE INDEX "webhook_events_idx" ON "webhook" USING gin ("events");--> statement-breakpoint
CREATE UNIQUE INDEX "webhook_attempt_dispatch_run_attempt_key" ON "webhook_attempt" USING btree ("dispatch_id","run","attempt");--> statement-breakpoint
CREATE UNIQUE INDEX "webhook_dispatch_event_webhook_key" ON "webhook_dispatch" USING btree ("event_id","webhook_id");--> statement-breakpoint
CREATE INDEX "webhook_dispatch_due_idx" ON "webhook_dispatch" USING btree ("next_attempt_at") WHERE "webhook_dispatch"."status" in ('pending', 'error');--> statement-breakpoint
CREATE INDEX "webhook_dispatch_webhook_created_idx" ON "webhook_dispatch" USING btree ("webhook_id","created_at");--> statement-breakpoint
CREATE INDEX "webhook_dispatch_webhook_success_idx" ON "webhook_dispatch" USING btree ("webhook_id","completed_at") WHERE "webhook_dispatch"."status" = 'success';--> statement-breakpoint
CREATE INDEX "webhook_dispatch_recovery_idx" ON "webhook_dispatch" USING btree ("recovery_id") WHERE "webhook_dispatch"."recovery_id" is not null;--> statement-breakpoint
CREATE INDEX "webhook_notification_webhook_idx" ON "webhook_notification" USING btree ("webhook_id");--> statement-breakpoint
CREATE INDEX "webhook_recovery_webhook_idx" ON "webhook_recovery" USING btree ("webhook_id");--> statement-breakpoint
CREATE INDEX "webhook_recovery_open_idx" ON "webhook_recovery" USING btree ("created_at") WHERE "webhook_recovery"."status" <> 'completed';--> statement-breakpoint
CREATE INDEX "webhook_route_job_run_at_idx" ON "webhook_route_job" USING btree ("run_at");