CREATE TABLE "console_session" (
	"id_hash" text PRIMARY KEY NOT NULL,
	"subject" text NOT NULL,
	"account" text NOT NULL,
	"role" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"revoked_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "portal_session" (
	"id" text PRIMARY KEY NOT NULL,
	"account" text NOT NULL,
	"frame_ancestors" jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"revoked_at" timestamp with time zone
);
--> statement-breakpoint
CREATE INDEX "console_session_expires_idx" ON "console_session" USING btree ("expires_at");--> statement-breakpoint
CREATE INDEX "portal_session_account_created_idx" ON "portal_session" USING btree ("account","created_at");--> statement-breakpoint
CREATE INDEX "portal_session_expires_idx" ON "portal_session" USING btree ("expires_at");
