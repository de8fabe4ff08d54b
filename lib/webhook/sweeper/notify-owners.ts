import { claimDueMails, foldExhaustedDigests, settleMail, type DueMail } from "../../db/sql/owner-notifications.ts";
import { errorFacts } from "../../log/error-facts.ts";
import type { MailMessage } from "../../mail/smtp-mailer.ts";
import type { SweeperTask } from "./sweeper-task.ts";

/** Webhooks folded into digests, and notifications mailed, per step. */
export const NOTIFY_BATCH = 20;
/** How long a claimed e-mail is left to its sender before another sweeper may try it. */
export const MAIL_LEASE_MS = 60_000;
/** E-mails are tried this many times (about a day: 30 s doubling to 1 h, then hourly), then given up (`failed`). */
export const MAIL_ATTEMPTS = 30;
const MAIL_BACKOFF_MS = { base: 30_000, max: 3_600_000 };

/**
 * Tells owners, durably: folds each webhook's exhausted dispatches into one
 * digest per `WEBHOOK_NOTIFY_WINDOW` (types, counts, example resource ids),
 * then mails what is due — digests, and disabled webhooks at once — to the
 * owning account's `email` (`OPS_EMAIL` for a global webhook). A failed send
 * is retried with backoff, so mail written while SMTP is down arrives once it
 * is back. Runs again while a batch was full.
 */
export const notifyOwnersTask: SweeperTask = {
  name: "notify-owners",
  async run({ hooklane, now }) {
    const { database, mailer, config, logger } = hooklane;
    const at = now();
    const folded = await foldExhaustedDigests(database, {
      now: at,
      windowMs: config.notifyWindowMs,
      limit: NOTIFY_BATCH,
    });
    const due = await claimDueMails(database, { now: at, leaseMs: MAIL_LEASE_MS, limit: NOTIFY_BATCH });
    for (const note of due) {
      const to = note.account === null ? config.opsEmail : note.email;
      if (!mailer || !to) {
        await settleMail(database, note.id, { status: "none", at });
        continue;
      }
      try {
        await mailer.send({ to, ...ownerMessage(note) });
        await settleMail(database, note.id, { status: "sent", at: now() });
      } catch (error) {
        const wait = Math.min(MAIL_BACKOFF_MS.base * 2 ** (note.attempts - 1), MAIL_BACKOFF_MS.max);
        const retryAt = note.attempts >= MAIL_ATTEMPTS ? null : new Date(now().getTime() + wait);
        const { message } = errorFacts(error);
        await settleMail(database, note.id, { status: "failed", error: message, retryAt });
        logger
          .child({ component: "sweeper" })
          .warn(
            { notificationId: note.id, webhookId: note.webhookId, attempt: note.attempts, error: message },
            "owner e-mail not sent",
          );
      }
    }
    return folded === NOTIFY_BATCH || due.length === NOTIFY_BATCH;
  },
};

interface DigestType {
  type: string;
  count: number;
  examples: string[];
}

/** The e-mail for one notification: plain text, naming the webhook and what happened. */
export function ownerMessage(note: DueMail): Omit<MailMessage, "to"> {
  const { webhookId, url, detail } = note;
  if (note.kind === "webhook.disabled") {
    const facts = Object.entries(detail)
      .map(([key, value]) => `${key}: ${String(value)}`)
      .join("\n");
    return {
      subject: `Webhook ${webhookId} was disabled`,
      text: `Your webhook ${webhookId} (${url}) was disabled and receives nothing until you re-enable it.\nIts events are kept and are delivered once it is active again.\n\n${facts}\n`,
    };
  }
  const total = Number(detail.total);
  const types = (detail.types as DigestType[]).map(
    (t) => `  ${t.type}: ${t.count}${t.examples.length > 0 ? ` (e.g. ${t.examples.join(", ")})` : ""}`,
  );
  return {
    subject: `${total} ${total === 1 ? "delivery" : "deliveries"} to webhook ${webhookId} failed for good`,
    text: [
      `Between ${String(detail.windowStart)} and ${String(detail.windowEnd)}, ${total} ${total === 1 ? "event" : "events"} could not be delivered to your webhook ${webhookId} (${url}) after every retry:`,
      "",
      ...types,
      "",
      "Find them with GET /v3/webhook-dispatches?resourceId=… or the delivery log, and retry or recover them from there.",
      "",
    ].join("\n"),
  };
}
