import { and, eq, ne, sql } from "drizzle-orm";
import type { Database } from "../../db/client.ts";
import { webhook, webhookNotification, type NotificationKind } from "../../db/schema.ts";
import type { Logger } from "../../log/logger.ts";
import type { Mailer } from "../../mail/smtp-mailer.ts";
import type { AttemptResult } from "./webhook-out-deliver.handler.ts";

/**
 * Applies what a batch of attempts means beyond the ledger: a `410 Gone`
 * disables its webhook, and the owner is told about every disable and every
 * exhausted dispatch (see `notifyOwner`).
 */
export async function applyAttemptConsequences(
  database: Database,
  results: readonly AttemptResult[],
  mailer: Mailer | undefined,
  logger: Logger,
): Promise<void> {
  for (const result of results) {
    if (result.gone) {
      const reason = "endpoint answered 410 Gone";
      const disabled = await database.db
        .update(webhook)
        .set({ status: "disabled", disabledReason: reason, statusChangedAt: sql`now()`, updatedAt: sql`now()` })
        .where(and(eq(webhook.id, result.webhookId), ne(webhook.status, "disabled")))
        .returning({ id: webhook.id });
      if (disabled.length > 0) {
        logger.warn({ webhookId: result.webhookId, dispatchId: result.dispatchId }, "webhook disabled: 410 Gone");
        await notifyOwner(database, mailer, logger, {
          webhookId: result.webhookId,
          kind: "webhook.disabled",
          detail: { reason, dispatchId: result.dispatchId },
        });
      }
    }
    if (result.status === "exhausted") {
      await notifyOwner(database, mailer, logger, {
        webhookId: result.webhookId,
        kind: "dispatch.exhausted",
        detail: {
          dispatchId: result.dispatchId,
          eventId: result.eventId,
          attempts: result.attempt,
          lastError: result.errorMessage,
        },
      });
    }
  }
}

/**
 * Tells a webhook's owner: always a `webhook_notification` row, and, with a
 * mailer, an e-mail to the owning account's `email`. The e-mail is sent after
 * the row is written and is not waited for, so a slow or failing SMTP server
 * never holds up the caller; its failures are logged. Global webhooks have no
 * owning account and get the row only.
 */
export async function notifyOwner(
  database: Database,
  mailer: Mailer | undefined,
  logger: Logger,
  notice: { webhookId: string; kind: NotificationKind; detail: Record<string, unknown> },
): Promise<void> {
  // The owner is the webhook's account (null for a global webhook), not the event's.
  const [owner] = await database.rows<{ url: string; email: string | null }>(sql`
    with note as (
      insert into ${webhookNotification} (webhook_id, account, kind, detail)
      select id, account, ${notice.kind}, ${JSON.stringify(notice.detail)}::jsonb from ${webhook}
      where id = ${notice.webhookId}
      returning webhook_id, account
    )
    select w.url, a.email from note join webhook w on w.id = note.webhook_id left join account a on a.id = note.account
  `);
  if (!mailer || !owner?.email) return;
  mailer
    .send({ to: owner.email, ...ownerMessage(notice, owner.url) })
    .catch((error: unknown) => logger.warn({ err: error, webhookId: notice.webhookId }, "owner e-mail not sent"));
}

function ownerMessage(
  notice: { webhookId: string; kind: NotificationKind; detail: Record<string, unknown> },
  url: string,
): { subject: string; text: string } {
  const facts = Object.entries(notice.detail)
    .map(([key, value]) => `${key}: ${String(value)}`)
    .join("\n");
  if (notice.kind === "webhook.disabled") {
    return {
      subject: `Webhook ${notice.webhookId} was disabled`,
      text: `Your webhook ${notice.webhookId} (${url}) was disabled and receives nothing until you re-enable it.\nIts events are kept and are delivered once it is active again.\n\n${facts}\n`,
    };
  }
  return {
    subject: `A delivery to webhook ${notice.webhookId} failed for good`,
    text: `An event could not be delivered to your webhook ${notice.webhookId} (${url}) after every retry.\nYou can retry it from the delivery log.\n\n${facts}\n`,
  };
}
