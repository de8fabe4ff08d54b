CREATE TABLE "webhook_worker" (
	"id" text PRIMARY KEY NOT NULL,
	"started_at" timestamp with time zone DEFAULT now() NOT NULL,
	"heartbeat_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_claim_at" timestamp with time zone,
	"in_flight" integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
ALTER TABLE "webhook" ADD COLUMN "origin" text GENERATED ALWAYS AS (coalesce(lower(substring(url from '^[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*')), url)) STORED NOT NULL;--> statement-breakpoint
ALTER TABLE "webhook" ADD COLUMN "rate_limit" integer;--> statement-breakpoint
ALTER TABLE "webhook" ADD COLUMN "rate_tokens" double precision;--> statement-breakpoint
ALTER TABLE "webhook" ADD COLUMN "rate_refilled_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "webhook" ADD COLUMN "breaker_failures" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "webhook" ADD COLUMN "breaker_opens" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "webhook" ADD COLUMN "breaker_open_until" timestamp with time zone;--> statement-breakpoint
CREATE INDEX "webhook_dispatch_webhook_due_idx" ON "webhook_dispatch" USING btree ("webhook_id","next_attempt_at") WHERE "webhook_dispatch"."status" in ('pending', 'error');--> statement-breakpoint
CREATE INDEX "webhook_dispatch_leased_idx" ON "webhook_dispatch" USING btree ("locked_by") WHERE "webhook_dispatch"."locked_until" is not null;