import { html } from "hono/html";
import type { z } from "zod";
import type { notificationSchema } from "../routes/v3/notifications.ts";
import { layout, when, type PageContext } from "./console-layout.ts";

type Notification = z.output<typeof notificationSchema>;

/** One line saying what a notification told: a digest's types and counts, or a disable's reason. */
function notificationSummary(n: Notification) {
  const detail = n.detail as {
    total?: number;
    types?: Array<{ type: string; count: number; examples: string[] }>;
    reason?: string;
    eventId?: string;
  };
  if (n.kind === "dispatch.exhausted.digest") {
    return html`${detail.total} failed for good:
    ${(detail.types ?? []).map(
      (t) =>
        html`<br /><code>${t.type}</code> × ${t.count}
          ${t.examples.length > 0 ? html`<small>(e.g. ${t.examples.join(", ")})</small>` : ""}`,
    )}`;
  }
  if (n.kind === "webhook.disabled") return html`disabled: ${detail.reason ?? ""}`;
  return html`<code>${detail.eventId ?? ""}</code> failed for good${n.digest ? html` (in ${n.digest})` : ""}`;
}

/** What the e-mail column's status means, in words. */
const MAIL_MEANING: Record<string, string> = {
  pending: "waiting to be mailed",
  sent: "mailed",
  none: "not mailed: no SMTP server is configured, or the account has no e-mail address (set email on the account)",
  failed: "gave up mailing it",
  digest: "told in its digest",
};

/**
 * What owners were told (digests of deliveries that failed for good, disables) and whether the e-mail went. A
 * deleted webhook is named but not linked (`live` holds the ones that still have a page).
 */
export function notificationsPage(input: { notifications: Notification[]; live: Set<string>; context: PageContext }) {
  const { notifications, context } = input;
  return layout(
    "Notifications",
    html`<p>What the owners of these webhooks were told, and whether the e-mail went.</p>
      <table>
        <thead>
          <tr>
            <th scope="col">When</th>
            <th scope="col">Webhook</th>
            <th scope="col">What</th>
            <th scope="col">E-mail</th>
          </tr>
        </thead>
        <tbody>
          ${notifications.map(
            (n) =>
              html`<tr>
                <td>${when(n.created)}</td>
                <td>
                  ${
                    input.live.has(n.webhook)
                      ? html`<a href="${context.base}/webhooks/${n.webhook}"><code>${n.webhook}</code></a>`
                      : html`<code>${n.webhook}</code> <small>(deleted)</small>`
                  }
                </td>
                <td>${notificationSummary(n)}</td>
                <td>
                  ${n.mail.status}<br /><small>${MAIL_MEANING[n.mail.status] ?? ""}</small
                  >${n.mail.sent ? html`<br /><small>${when(n.mail.sent)}</small>` : ""}
                  ${n.mail.error ? html`<br /><small>${n.mail.error} (attempt ${n.mail.attempts})</small>` : ""}
                </td>
              </tr>`,
          )}
        </tbody>
      </table>
      ${notifications.length === 0 ? html`<p>Nothing to tell yet.</p>` : ""}`,
    { ...context, signedIn: true },
  );
}
