import { html } from "hono/html";
import { inlineStyle } from "../inline-style.ts";
import type { z } from "zod";
import type { dispatchSchema, recoverySchema } from "../routes/v3/dispatch-schemas.ts";
import type { notificationSchema } from "../routes/v3/notifications.ts";
import type { webhookSchema } from "../routes/v3/webhook-schemas.ts";

/** The console's one stylesheet, inline; the CSP allows exactly this text by its hash. */
export const CONSOLE_STYLE = inlineStyle(`
body {
  font:
    15px/1.5 system-ui,
    sans-serif;
  max-width: 72rem;
  margin: 1.5rem auto;
  padding: 0 1rem;
  color: #1b1b1b;
}
table {
  border-collapse: collapse;
  width: 100%;
}
td,
th {
  border-bottom: 1px solid #ddd;
  padding: 0.3rem 0.5rem;
  text-align: left;
  vertical-align: top;
}
code {
  font:
    13px ui-monospace,
    monospace;
}
.notice {
  background: #eef6ee;
  border: 1px solid #9c9;
  padding: 0.4rem 0.6rem;
}
.status-success,
.status-active {
  color: #276227;
}
.status-error,
.status-paused {
  color: #8a6d00;
}
.status-exhausted,
.status-disabled {
  color: #a12a2a;
  font-weight: bold;
}
form.inline {
  display: inline;
}
header {
  display: flex;
  justify-content: space-between;
  align-items: baseline;
}
`);

type Webhook = z.output<typeof webhookSchema>;
type Dispatch = z.output<typeof dispatchSchema>;
type Recovery = z.output<typeof recoverySchema>;
type Notification = z.output<typeof notificationSchema>;

/** The recovery windows the console offers, in hours back from now. */
export const RECOVERY_WINDOWS_HOURS = [1, 24, 24 * 7] as const;

/** The hidden field that carries the form token (see console-csrf.ts) in every form. */
const tokenField = (csrf: string) => html`<input type="hidden" name="csrf" value="${csrf}" />`;

function layout(
  title: string,
  body: unknown,
  options: { signedIn: boolean; csrf: string; notice?: string | undefined },
) {
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <title>${title} — hooklane</title>
        ${CONSOLE_STYLE.element}
      </head>
      <body>
        <header>
          <h1><a href="/console">hooklane</a> · ${title}</h1>
          ${
            options.signedIn
              ? html`<form class="inline" method="post" action="/console/logout">
                  ${tokenField(options.csrf)}<button>Sign out</button>
                </form>`
              : ""
          }
        </header>
        ${options.notice ? html`<p class="notice">${options.notice}</p>` : ""} ${body}
      </body>
    </html>`;
}

export function loginPage(csrf: string, error?: string) {
  return layout(
    "sign in",
    html`<form method="post" action="/console/login">
      ${tokenField(csrf)}
      <p>Paste an API bearer token (<code>npm run token</code> mints one for development).</p>
      <p><textarea name="token" rows="4" cols="80" required></textarea></p>
      <p><button>Sign in</button></p>
    </form>`,
    { signedIn: false, csrf, notice: error },
  );
}

export function webhooksPage(webhooks: Webhook[], csrf: string) {
  return layout(
    "webhooks",
    html`<table>
        <tr>
          <th>webhook</th>
          <th>url</th>
          <th>events</th>
          <th>status</th>
          <th>scheme</th>
        </tr>
        ${webhooks.map(
          (w) =>
            html`<tr>
              <td>
                <a href="/console/webhooks/${w.id}"><code>${w.id}</code></a
                ><br />${w.description}
              </td>
              <td><code>${w.url}</code></td>
              <td>${w.events.join(", ")}</td>
              <td class="status-${w.status}">
                ${w.status}${w.disabledReason ? html`<br /><small>${w.disabledReason}</small>` : ""}
              </td>
              <td>${w.scheme}</td>
            </tr>`,
        )}
      </table>
      ${webhooks.length === 0 ? html`<p>No webhooks yet: create one with <code>POST /v3/webhooks</code>.</p>` : ""}
      <p><a href="/console/notifications">Notifications</a>: what owners were told, and whether the e-mail went.</p>`,
    { signedIn: true, csrf },
  );
}

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

export function notificationsPage(notifications: Notification[], csrf: string) {
  return layout(
    "notifications",
    html`<table>
        <tr>
          <th>when</th>
          <th>webhook</th>
          <th>what</th>
          <th>e-mail</th>
        </tr>
        ${notifications.map(
          (n) =>
            html`<tr>
              <td>${n.created}</td>
              <td>
                <a href="/console/webhooks/${n.webhook}"><code>${n.webhook}</code></a>
              </td>
              <td>${notificationSummary(n)}</td>
              <td>
                ${n.mail.status}${n.mail.sent ? html`<br /><small>${n.mail.sent}</small>` : ""}
                ${n.mail.error ? html`<br /><small>${n.mail.error} (attempt ${n.mail.attempts})</small>` : ""}
              </td>
            </tr>`,
        )}
      </table>
      ${notifications.length === 0 ? html`<p>Nothing to tell yet.</p>` : ""}`,
    { signedIn: true, csrf },
  );
}

export function webhookPage(input: {
  webhook: Webhook;
  dispatches: Dispatch[];
  nextCursor: string | null;
  status: string | undefined;
  recovery: Recovery | undefined;
  notice: string | undefined;
  csrf: string;
}) {
  const { webhook: w, dispatches, nextCursor, status, recovery, csrf } = input;
  const filter = status ? `&status=${status}` : "";
  return layout(
    w.id,
    html`<p><code>${w.url}</code> · <span class="status-${w.status}">${w.status}</span> · ${w.events.join(", ")}</p>
      ${
        recovery
          ? html`<p class="notice">
              Recovery <code>${recovery.id}</code>: ${recovery.status}; ${recovery.requeued} of ${recovery.total ?? "…"}
              requeued, ${recovery.delivered} delivered, ${recovery.failed} failed again.
              <a href="/console/webhooks/${w.id}?recovery=${recovery.id}">Refresh</a>
            </p>`
          : ""
      }
      <form method="post" action="/console/webhooks/${w.id}/recover">
        ${tokenField(csrf)} Retry every failed and exhausted delivery of the last
        <select name="hours">
          ${RECOVERY_WINDOWS_HOURS.map((hours) => html`<option value="${hours}">${hours < 48 ? `${hours} h` : `${hours / 24} days`}</option>`)}
        </select>
        <button>Bulk retry</button>
      </form>
      <p>
        Show: <a href="/console/webhooks/${w.id}">all</a> ·
        ${["pending", "error", "exhausted", "success"].map(
          (s) => html`<a href="/console/webhooks/${w.id}?status=${s}">${s}</a> `,
        )}
      </p>
      <table>
        <tr>
          <th>event</th>
          <th>status</th>
          <th>attempts</th>
          <th>last code</th>
          <th>next retry</th>
          <th>created</th>
          <th></th>
        </tr>
        ${dispatches.map(
          (d) =>
            html`<tr>
              <td>
                <code>${d.event.type}</code><br /><small><code>${d.event.id}</code></small>
              </td>
              <td class="status-${d.status}">
                ${d.status}${d.lastError ? html`<br /><small>${d.lastError}</small>` : ""}
              </td>
              <td>${d.attemptCount}${d.run > 1 ? html` <small>(run ${d.run})</small>` : ""}</td>
              <td>${d.lastStatusCode ?? "—"}</td>
              <td>${d.nextAttempt ?? "—"}</td>
              <td>${d.created}</td>
              <td>
                ${
                  d.status === "pending"
                    ? ""
                    : html`<form class="inline" method="post" action="/console/dispatches/${d.id}/retry">
                        ${tokenField(csrf)}<input type="hidden" name="webhook" value="${w.id}" /><button>
                          Retry now
                        </button>
                      </form>`
                }
              </td>
            </tr>`,
        )}
      </table>
      ${nextCursor ? html`<p><a href="/console/webhooks/${w.id}?cursor=${nextCursor}${filter}">Older →</a></p>` : ""}`,
    { signedIn: true, csrf, notice: input.notice },
  );
}

/** An API refusal (404, 409, 422…), shown with the API's own words. */
export function problemPage(title: string, detail: string, csrf: string) {
  return layout(
    title,
    html`<p>${detail}</p>
      <p><a href="/console">Back to the webhooks</a></p>`,
    { signedIn: true, csrf },
  );
}
