CREATE TABLE "secret_handover" (
	"id_hash" text PRIMARY KEY NOT NULL,
	"webhook_id" text NOT NULL,
	"secret_sealed" text NOT NULL,
	"rotated" boolean NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE INDEX "secret_handover_expires_idx" ON "secret_handover" USING btree ("expires_at");
