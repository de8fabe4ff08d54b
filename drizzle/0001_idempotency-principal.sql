ALTER TABLE "idempotency_key" ADD COLUMN "principal" text;
