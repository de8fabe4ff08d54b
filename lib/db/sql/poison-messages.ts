import { sql } from "drizzle-orm";
import type { Database } from "../client.ts";
import { safeText } from "../safe-text.ts";

/** Keeps a message that can never be processed (bad schema, unknown event), so it is acknowledged, not retried. */
export async function recordPoisonMessage(
  database: Database,
  topic: string,
  message: unknown,
  error: string,
): Promise<void> {
  // Whatever a poison message holds must not make its own record fail (jsonb refuses NUL and lone surrogates).
  const json = (
    JSON.stringify(message ?? null, (_key, value: unknown) => (typeof value === "string" ? safeText(value) : value)) ??
    "null"
  ).replaceAll("\\u0000", "\\ufffd");
  await database.rows(sql`
    insert into webhook_poison_message (topic, message, error)
    values (${safeText(topic).slice(0, 200)}, ${json}::jsonb, ${safeText(error).slice(0, 2_000)})
  `);
}
