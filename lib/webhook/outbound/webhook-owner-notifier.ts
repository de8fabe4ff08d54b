import { and, eq, ne, sql } from "drizzle-orm";
import type { Database } from "../../db/client.ts";
import { webhook, webhookNotification } from "../../db/schema.ts";
import type { AttemptResult } from "./webhook-out-deliver.handler.ts";

/**
 * Applies what a batch of attempts means beyond the ledger: a `410 Gone`
 * disables its webhook, and the owner is told about every disable and every
 * exhausted dispatch.
 */
export async function applyAttemptConsequences(database: Database, results: readonly AttemptResult[]): Promise<void> {
  for (const result of results) {
    if (result.gone) {
      const disabled = await database.db
        .update(webhook)
        .set({ status: "disabled", disabledReason: "endpoint answered 410 Gone", updatedAt: sql`now()` })
        .where(and(eq(webhook.id, result.webhookId), ne(webhook.status, "disabled")))
        .returning({ id: webhook.id });
      if (disabled.length > 0) {
        await notify(database, result, "webhook.disabled", {
          reason: "endpoint answered 410 Gone",
          dispatchId: result.dispatchId,
        });
      }
    }
    if (result.status === "exhausted") {
      await notify(database, result, "dispatch.exhausted", {
        dispatchId: result.dispatchId,
        eventId: result.eventId,
        attempts: result.attempt,
        lastError: result.errorMessage,
      });
    }
  }
}

async function notify(
  database: Database,
  result: AttemptResult,
  kind: "webhook.disabled" | "dispatch.exhausted",
  detail: Record<string, unknown>,
): Promise<void> {
  // The owner is the webhook's account (null for a global webhook), not the event's.
  await database.rows(sql`
    insert into ${webhookNotification} (webhook_id, account, kind, detail)
    select id, account, ${kind}, ${JSON.stringify(detail)}::jsonb from ${webhook} where id = ${result.webhookId}
  `);
}
