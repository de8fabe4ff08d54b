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
CREATE TABLE "webhook_lane_minute" (
	"minute" timestamp with time zone PRIMARY KEY NOT NULL,
	"attempts" integer NOT NULL,
	"succeeded" integer NOT NULL
);
--> statement-breakpoint
ALTER TABLE "webhook_health" ADD CONSTRAINT "webhook_health_webhook_id_webhook_id_fk" FOREIGN KEY ("webhook_id") REFERENCES "public"."webhook"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "webhook_health_hour" ADD CONSTRAINT "webhook_health_hour_webhook_id_webhook_id_fk" FOREIGN KEY ("webhook_id") REFERENCES "public"."webhook"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "webhook_health_hour_hour_idx" ON "webhook_health_hour" USING btree ("hour");