import { and, eq, ne, sql } from "drizzle-orm";
import type { Database } from "../../db/client.ts";
import { webhook, type NotificationKind } from "../../db/schema.ts";
import type { Logger } from "../../log/logger.ts";
import { wakeSweepers } from "../sweeper/wake-sweepers.ts";
import type { AttemptResult } from "./webhook-out-deliver.handler.ts";

/**
 * Applies what a batch of attempts means beyond the ledger: a `410 Gone`
 * disables its webhook and tells its owner (mailed by the sweeper: at once
 * when `wake`, else at its next run). Exhausted dispatches need nothing
 * here: their notifications are written with the attempt record
 * (`recordAttempts`).
 */
export async function applyAttemptConsequences(
  database: Database,
  results: readonly AttemptResult[],
  logger: Logger,
  wake: boolean,
): Promise<void> {
  let disabled = 0;
  for (const result of results) {
    if (!result.gone) continue;
    const reason = "endpoint answered 410 Gone";
    await database.transaction(async (tx) => {
      const rows = await tx.db
        .update(webhook)
        .set({ status: "disabled", disabledReason: reason, statusChangedAt: sql`now()`, updatedAt: sql`now()` })
        .where(and(eq(webhook.id, result.webhookId), ne(webhook.status, "disabled")))
        .returning({ id: webhook.id });
      if (rows.length === 0) return;
      logger.warn({ webhookId: result.webhookId, dispatchId: result.dispatchId }, "webhook disabled: 410 Gone");
      await notifyOwner(tx, {
        webhookId: result.webhookId,
        kind: "webhook.disabled",
        detail: { reason, dispatchId: result.dispatchId },
      });
      disabled++;
    });
  }
  if (disabled > 0 && wake) await wakeSweepers(database);
}

/**
 * Tells a webhook's owner: a `webhook_notification` row, written with the
 * caller's database handle (inside its transaction when it has one). The
 * sweeper mails it (`notify-owners`): to the owning account's `email`, or to
 * `OPS_EMAIL` for a global webhook, retrying until the SMTP server takes it.
 */
export async function notifyOwner(
  database: Database,
  notice: {
    webhookId: string;
    kind: Exclude<NotificationKind, "dispatch.exhausted.digest">;
    detail: Record<string, unknown>;
  },
): Promise<void> {
  // The owner is the webhook's account (null for a global webhook), not the event's.
  await database.rows(sql`
    insert into webhook_notification (webhook_id, account, kind, detail, mail_status)
    select id, account, ${notice.kind}, ${JSON.stringify(notice.detail)}::jsonb,
      ${notice.kind === "dispatch.exhausted" ? "digest" : "pending"}
    from ${webhook} where id = ${notice.webhookId}
  `);
}
