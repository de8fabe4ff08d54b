ALTER TABLE "webhook_notification" ADD COLUMN "mail_status" text DEFAULT 'pending' NOT NULL;--> statement-breakpoint
ALTER TABLE "webhook_notification" ADD COLUMN "mail_attempts" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "webhook_notification" ADD COLUMN "next_mail_at" timestamp with time zone DEFAULT now() NOT NULL;--> statement-breakpoint
ALTER TABLE "webhook_notification" ADD COLUMN "mailed_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "webhook_notification" ADD COLUMN "mail_error" text;--> statement-breakpoint
ALTER TABLE "webhook_notification" ADD COLUMN "digest_id" bigint;--> statement-breakpoint
CREATE INDEX "webhook_notification_account_idx" ON "webhook_notification" USING btree ("account","id");--> statement-breakpoint
CREATE INDEX "webhook_notification_mail_due_idx" ON "webhook_notification" USING btree ("next_mail_at") WHERE "webhook_notification"."mail_status" = 'pending';--> statement-breakpoint
CREATE INDEX "webhook_notification_undigested_idx" ON "webhook_notification" USING btree ("webhook_id","created_at") WHERE "webhook_notification"."kind" = 'dispatch.exhausted' and "webhook_notification"."digest_id" is null;--> statement-breakpoint
-- Notifications written before this migration were e-mailed when they were written: never again, nor in a digest.
UPDATE "webhook_notification" SET "mail_status" = CASE WHEN "kind" = 'dispatch.exhausted' THEN 'digest' ELSE 'sent' END, "digest_id" = CASE WHEN "kind" = 'dispatch.exhausted' THEN "id" END;
