ALTER TABLE "webhook" ADD COLUMN "expires_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "webhook_dispatch" ADD COLUMN "test_mode" text;--> statement-breakpoint
CREATE INDEX "webhook_expires_idx" ON "webhook" USING btree ("expires_at") WHERE "webhook"."expires_at" is not null;--> statement-breakpoint
ALTER TABLE "webhook_dispatch" ADD CONSTRAINT "webhook_dispatch_test_mode_check" CHECK ("webhook_dispatch"."test_mode" is null or "webhook_dispatch"."event_type" = 'webhook.test');