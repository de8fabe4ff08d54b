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
ALTER TABLE "webhook_recovery" ALTER COLUMN "webhook_id" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "webhook" ADD COLUMN "held_event_max_age" integer;--> statement-breakpoint
ALTER TABLE "webhook" ADD COLUMN "deleted_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "webhook" ADD COLUMN "deleted_by" text;--> statement-breakpoint
ALTER TABLE "webhook_dispatch" ADD COLUMN "resource_id" text GENERATED ALWAYS AS (((payload)::jsonb -> 'data' ->> 'id')) STORED;--> statement-breakpoint
ALTER TABLE "webhook_recovery" ADD COLUMN "kind" text DEFAULT 'recover' NOT NULL;--> statement-breakpoint
ALTER TABLE "webhook_recovery" ADD COLUMN "account" text;--> statement-breakpoint
ALTER TABLE "webhook_recovery" ADD COLUMN "event_type" text;--> statement-breakpoint
CREATE INDEX "audit_log_account_created_idx" ON "audit_log" USING btree ("account","created_at");--> statement-breakpoint
CREATE INDEX "audit_log_target_idx" ON "audit_log" USING btree ("target");--> statement-breakpoint
CREATE INDEX "webhook_deleted_idx" ON "webhook" USING btree ("deleted_at") WHERE "webhook"."deleted_at" is not null;--> statement-breakpoint
CREATE INDEX "webhook_dispatch_resource_idx" ON "webhook_dispatch" USING btree ("resource_id");--> statement-breakpoint
CREATE INDEX "webhook_dispatch_type_created_idx" ON "webhook_dispatch" USING btree ("event_type","created_at");--> statement-breakpoint
ALTER TABLE "webhook_recovery" ADD CONSTRAINT "webhook_recovery_kind_check" CHECK (("webhook_recovery"."kind" = 'recover' and "webhook_recovery"."webhook_id" is not null) or ("webhook_recovery"."kind" = 'resend' and "webhook_recovery"."event_type" is not null));