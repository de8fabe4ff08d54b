import type { Database } from "../client.ts";
import { webhookPoisonMessage } from "../schema.ts";

/** Keeps a message that can never be processed (bad schema, unknown event), so it is acknowledged, not retried. */
export async function recordPoisonMessage(
  database: Database,
  topic: string,
  message: unknown,
  error: string,
): Promise<void> {
  await database.db
    .insert(webhookPoisonMessage)
    .values({ topic, message: message ?? null, error: error.slice(0, 2_000) });
}
