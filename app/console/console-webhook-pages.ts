import { html } from "hono/html";
import type { z } from "zod";
import type { dispatchSchema, recoverySchema } from "../routes/v3/dispatch-schemas.ts";
import type { eventTypeSchema } from "../routes/v3/webhook-event-types.ts";
import type { webhookHealthSchema } from "../routes/v3/webhook-health.ts";
import { healthCharts, type HealthHistories } from "./health-chart.ts";
import { liveEvery } from "./console-live.ts";
import type { webhookSchema } from "../routes/v3/webhook-schemas.ts";
import { ROTATION_OVERLAP_MS } from "../routes/v3/webhook-rotate-secret.ts";
import { layout, tokenField, until, when, type PageContext } from "./console-layout.ts";
import { keySetPath, keysPagePath } from "./console-signing-key-pages.ts";
import { dispatchAction, recoveriesList, recoveryFinished, RECOVERY_WINDOWS_HOURS } from "./console-delivery-pages.ts";

export type Webhook = z.output<typeof webhookSchema>;
export type Health = z.input<typeof webhookHealthSchema>;
export type EventType = z.output<typeof eventTypeSchema>;
type Dispatch = z.output<typeof dispatchSchema>;
type Recovery = z.output<typeof recoverySchema>;

/** The delivery log's filters, as the console's query string carries them. */
export interface LogFilters {
  status?: string | undefined;
  eventType?: string | undefined;
  since?: string | undefined;
  until?: string | undefined;
  /** An event id (`evt_…`) or a resource id. */
  q?: string | undefined;
}

/** The graces the console offers a rotation, in seconds, with their names; the API's default is chosen. */
export const ROTATION_GRACES = [
  [0, "none — stop it now (a leak)"],
  [3_600, "1 hour"],
  [7_200, "2 hours"],
  [86_400, "24 hours"],
  [604_800, "7 days"],
] as const;

const pct = (rate: number | null) => (rate === null ? "—" : `${Math.round(rate * 1000) / 10} %`);

/** One word for how the endpoint is doing, from the lane's rollups: never a green `active` over failures. */
function verdict(health: Health | undefined) {
  if (!health) return html`<span>unknown</span>`;
  return html`<span class="verdict-${health.verdict}">${health.verdict}</span>`;
}

export function webhooksPage(input: {
  webhooks: Array<{ webhook: Webhook; health: Health | undefined }>;
  /** The account's deliveries over time, summed over its webhooks. */
  histories: HealthHistories;
  nextCursor: string | null;
  cursor: string | undefined;
  notice?: string | undefined;
  context: PageContext;
}) {
  const { webhooks, nextCursor, cursor } = input;
  const base = input.context.base;
  return layout(
    "Webhooks",
    html`<div class="actions"><a href="${base}/webhooks/new">New webhook</a></div>
      ${
        webhooks.length === 0
          ? html`<p>No webhooks yet. <a href="${base}/webhooks/new">Create one</a> to start receiving events.</p>`
          : html`<table>
              <tr class="head">
                <th scope="col">Webhook</th>
                <th scope="col">Status</th>
                <th scope="col">Health (24 h)</th>
                <th scope="col">Events</th>
              </tr>
              ${webhooks.map(
                ({ webhook: w, health }) =>
                  html`<tr>
                    <td data-label="Webhook">
                      <a href="${base}/webhooks/${w.id}"><code>${w.url}</code></a
                      ><br /><small><code>${w.id}</code>${w.description ? html` · ${w.description}` : ""}</small>
                    </td>
                    <td data-label="Status" class="status-${w.status}">
                      ${w.status}${w.disabledReason ? html`<br /><small>${w.disabledReason}</small>` : ""}${
                        awaitingConsent(w) ? html`<br />${consentBadge}` : ""
                      }
                    </td>
                    <td data-label="Health">
                      ${verdict(health)}${
                        health && health.attempts > 0
                          ? html`<br /><small>${pct(health.successRate)} of ${health.attempts} attempts</small>`
                          : ""
                      }
                    </td>
                    <td data-label="Events">${w.events.join(", ")}</td>
                  </tr>`,
              )}
            </table>`
      }
      <p>
        ${cursor ? html`<a href="${base}">Newest</a> ` : ""}
        ${nextCursor ? html`<a href="${base}?cursor=${nextCursor}">More webhooks →</a>` : ""}
      </p>
      ${webhooks.length === 0 ? "" : healthCharts(input.histories, "account", "All webhooks over time")}`,
    { signedIn: true, ...input.context, notice: input.notice },
  );
}

function healthFacts(health: Health | undefined) {
  if (!health) return "";
  return html`<h2>Health</h2>
    <dl class="facts">
      <dt>Verdict</dt>
      <dd>${verdict(health)}</dd>
      <dt>Last 24 h</dt>
      <dd>${health.attempts} attempts, ${pct(health.successRate)} succeeded</dd>
      <dt>Failures in a row</dt>
      <dd>${health.failuresInARow}</dd>
      <dt>Last error</dt>
      <dd>${health.lastError ?? "—"}</dd>
      <dt>Last success</dt>
      <dd>${when(health.lastSuccess)}</dd>
      <dt>Waiting</dt>
      <dd>${health.backlog.pending} pending, ${health.backlog.error} to retry, ${health.backlog.inFlight} in flight</dd>
      <dt>Next attempt</dt>
      <dd>${when(health.nextAttempt)}</dd>
      <dt>Circuit breaker</dt>
      <dd>${health.breaker.state}${health.breaker.openUntil ? html` until ${when(health.breaker.openUntil)}` : ""}</dd>
    </dl>`;
}

function logFilters(base: string, w: Webhook, eventTypes: string[], filters: LogFilters) {
  const active = Object.entries(filters).filter(([, value]) => value);
  return html`<form class="filters" method="get" action="${base}/webhooks/${w.id}" role="search">
      <label
        >Status
        <select name="status">
          <option value="">any</option>
          ${["pending", "error", "exhausted", "success"].map(
            (s) => html`<option value="${s}" ${filters.status === s ? "selected" : ""}>${s}</option>`,
          )}
        </select></label
      >
      <label
        >Event type
        <select name="eventType">
          <option value="">any</option>
          ${eventTypes.map(
            (t) => html`<option value="${t}" ${filters.eventType === t ? "selected" : ""}>${t}</option>`,
          )}
        </select></label
      >
      <label>From (UTC) <input type="datetime-local" name="since" value="${filters.since ?? ""}" /></label>
      <label>To (UTC) <input type="datetime-local" name="until" value="${filters.until ?? ""}" /></label>
      <label
        >Event or resource id <input type="search" name="q" value="${filters.q ?? ""}" placeholder="evt_… or pd_…"
      /></label>
      <button>Apply</button>
    </form>
    ${
      active.length
        ? html`<p role="status">
            Showing deliveries where
            ${active.map(([key, value], i) => html`${i ? ", " : ""}${key} = <code>${value}</code>`)}.
            <a href="${base}/webhooks/${w.id}">Clear filters</a>
          </p>`
        : ""
    }`;
}

/** A webhook's own headers: each plain value as it is, each secret one only named. */
function headerList(headers: Webhook["headers"]) {
  const names = Object.keys(headers);
  if (names.length === 0) return "—";
  return html`<ul class="plain">
    ${names.map((name) => {
      const value = headers[name]!;
      return html`<li><code>${name}: ${typeof value === "string" ? value : "(secret, not shown)"}</code></li>`;
    })}
  </ul>`;
}

export function webhookPage(input: {
  webhook: Webhook;
  health: Health | undefined;
  histories: HealthHistories;
  /** Its latest recoveries, newest first (the API's shape). */
  recoveries: Recovery[];
  dispatches: Dispatch[];
  nextCursor: string | null;
  cursor: string | undefined;
  filters: LogFilters;
  eventTypes: string[];
  /** The sender's name the consent request gives (`WebHook-Request-Origin`), which the endpoint must allow. */
  consentOrigin: string;
  notice: string | undefined;
  context: PageContext;
}) {
  const { webhook: w, dispatches, nextCursor, filters, context } = input;
  const { csrf, base } = context;
  const kept = new URLSearchParams(Object.entries(filters).filter(([, v]) => v) as Array<[string, string]>);
  const paused = w.status === "paused" || w.status === "disabled";
  // The newest page keeps its health and log current; an older page stays as it was read.
  const live = input.cursor === undefined;
  return layout(
    w.url,
    html`<div id="webhook-consent" ${liveEvery(live && awaitingConsent(w), 10)}>
        ${endpointConsent(w, input.consentOrigin, context)}
      </div>
      <dl class="facts">
        <dt>Id</dt>
        <dd><code>${w.id}</code></dd>
        <dt>Status</dt>
        <dd class="status-${w.status}">
          ${w.status}${w.disabledReason ? html` (${w.disabledReason})` : ""}${
            awaitingConsent(w) ? html` ${consentBadge}` : ""
          }
        </dd>
        <dt>Events</dt>
        <dd>${w.events.join(", ")}</dd>
        <dt>Signature</dt>
        <dd>${w.scheme}</dd>
        ${
          w.asymmetricSignature
            ? html`<dt>Public keys</dt>
                <dd>
                  <a href="${keySetPath(w.account)}">${keySetPath(w.account)}</a> ·
                  <a href="${keysPagePath(base, w.account === null ? "global" : "account")}"
                    >Signing keys and rotation</a
                  >
                </dd>`
            : ""
        }
        <dt>Ordering</dt>
        <dd>
          ${
            w.ordering === "resource"
              ? `per resource: one event of a resource at a time, in order; a failing one holds the next back for up to ${holdText(w.orderingHoldMax)}`
              : "none: events go as soon as they can"
          }
        </dd>
        <dt>Headers</dt>
        <dd>${headerList(w.headers)}</dd>
        <dt>Filter</dt>
        <dd>${w.filter === null ? "none — every event it subscribes to" : html`<code>${w.filter}</code>`}</dd>
        <dt>Description</dt>
        <dd>${w.description || "—"}</dd>
      </dl>
      <div class="actions">
        <a href="${base}/webhooks/${w.id}/edit">Edit</a>
        ${
          w.status === "listening"
            ? ""
            : html`<form class="inline" method="post" action="${base}/webhooks/${w.id}/${paused ? "resume" : "pause"}">
                ${tokenField(csrf)}<button>${paused ? "Resume deliveries" : "Pause deliveries"}</button>
              </form>`
        }
        <form class="inline" method="post" action="${base}/webhooks/${w.id}/test">
          ${tokenField(csrf)}<button>Send test event</button>
        </form>
        <a href="${base}/webhooks/${w.id}/delete">Delete…</a>
      </div>
      <div id="webhook-health" ${liveEvery(live, 10)}>${healthFacts(input.health)}</div>
      ${healthCharts(input.histories, "webhook", "Over time")} ${signingSecret(w, context)}
      <h2 id="recoveries">Bulk recovery</h2>
      <form class="filters" method="post" action="${base}/webhooks/${w.id}/recover">
        ${tokenField(csrf)}
        <label
          >Start every failed and exhausted delivery of the last
          <select name="hours">
            ${RECOVERY_WINDOWS_HOURS.map(
              (hours) => html`<option value="${hours}">${hours < 48 ? `${hours} h` : `${hours / 24} days`}</option>`,
            )}
          </select></label
        >
        <button>Start recovery</button>
      </form>
      <div
        id="webhook-recoveries"
        ${liveEvery(
          input.recoveries.some((r) => !recoveryFinished(r)),
          5,
        )}
      >
        ${recoveriesList(input.recoveries, context)}
      </div>
      <h2>Delivery log</h2>
      ${logFilters(base, w, input.eventTypes, filters)}
      <div id="delivery-log" ${liveEvery(live, 10)}>
        ${
          dispatches.length === 0
            ? html`<p>No deliveries match.</p>`
            : html`<table>
                <tr class="head">
                  <th scope="col">Event</th>
                  <th scope="col">Status</th>
                  <th scope="col">Attempts</th>
                  <th scope="col">Last answer</th>
                  <th scope="col">Next attempt</th>
                  <th scope="col">Created</th>
                  <th scope="col"><span class="skip">Actions</span></th>
                </tr>
                ${dispatches.map(
                  (d) =>
                    html`<tr>
                      <td data-label="Event">
                        <a href="${base}/dispatches/${d.id}"><code>${d.event.type}</code></a
                        ><br /><small>${d.sequence === null ? "" : `#${d.sequence} `}<code>${d.event.id}</code></small>
                      </td>
                      <td data-label="Status" class="status-${d.status}">
                        ${d.status}${d.lastError ? html`<br /><small>${d.lastError}</small>` : ""}
                      </td>
                      <td data-label="Attempts">
                        ${d.attemptCount}${d.run > 1 ? html` <small>(run ${d.run})</small>` : ""}
                      </td>
                      <td data-label="Last answer">${d.lastStatusCode ?? "—"}</td>
                      <td data-label="Next attempt">${when(d.nextAttempt)}</td>
                      <td data-label="Created">${when(d.created)}</td>
                      <td>${dispatchAction(d, context, `webhooks/${w.id}`)}</td>
                    </tr>`,
                )}
              </table>`
        }
      </div>
      <p>
        ${input.cursor ? html`<a href="${base}/webhooks/${w.id}?${kept}">Newest</a> ` : ""}
        ${
          nextCursor
            ? html`<a href="${base}/webhooks/${w.id}?${new URLSearchParams([...kept, ["cursor", nextCursor]])}"
                >Older →</a
              >`
            : ""
        }
      </p>`,
    { signedIn: true, ...context, notice: input.notice, live },
  );
}

const awaitingConsent = (w: Webhook) => w.consent?.state === "pending";

/** Marks a webhook whose deliveries are held until its endpoint consents. */
const consentBadge = html`<span class="badge">awaiting consent</span>`;

/**
 * Endpoint consent, when its account asks for it. Pending: deliveries are held, with how the asking has gone (the
 * last answer's error is the endpoint's doing, so only ever text), what the endpoint must answer, and a button that
 * asks it again now. Granted: when. Not asked: nothing.
 */
function endpointConsent(w: Webhook, origin: string, { csrf, base }: PageContext) {
  const consent = w.consent;
  if (consent === null) return "";
  if (consent.state === "granted") {
    return html`<p class="consented"><small>Endpoint consented ${when(consent.granted)}.</small></p>`;
  }
  return html`<section class="warning" aria-labelledby="consent-title">
    <h2 id="consent-title">Deliveries held: the endpoint has not consented yet</h2>
    <p>
      Nothing is sent to this URL until the endpoint answers the consent request. Events are kept meanwhile, and go to
      it once it consents.
    </p>
    <dl class="facts">
      <dt>Asked since</dt>
      <dd>${when(consent.requested)}</dd>
      <dt>Requests sent</dt>
      <dd>${consent.attempts}${consent.lastRequest ? html`, the last ${when(consent.lastRequest)}` : ""}</dd>
      <dt>Last answer</dt>
      <dd>${consent.lastError ?? "—"}</dd>
      <dt>Next request</dt>
      <dd>${consent.nextRequest ? when(consent.nextRequest) : "none will go on their own: ask the endpoint again"}</dd>
    </dl>
    <p>
      <small
        >To consent, the endpoint answers the <code>OPTIONS</code> request carrying
        <code>WebHook-Request-Origin: ${origin}</code> with a 2xx and <code>WebHook-Allowed-Origin: ${origin}</code> (or
        <code>*</code>).</small
      >
    </p>
    <form class="inline" method="post" action="${base}/webhooks/${w.id}/request-consent">
      ${tokenField(csrf)}<button>Ask the endpoint again</button>
    </form>
  </section>`;
}

/** Rotating the secret, with the grace the old one keeps signing for, and ending a rotation's overlap early. */
function signingSecret(w: Webhook, { csrf, base }: PageContext) {
  const defaultGrace = ROTATION_OVERLAP_MS / 1_000;
  return html`<h2>Signing secret</h2>
    ${
      // The API names it only while it is still ahead.
      w.previousSecretExpires
        ? html`<div class="actions">
            <span>The previous secret also signs until ${until(w.previousSecretExpires)}.</span>
            <form class="inline" method="post" action="${base}/webhooks/${w.id}/expire-previous-secret">
              ${tokenField(csrf)}<button>Stop the previous secret now</button>
            </form>
          </div>`
        : ""
    }
    <form class="filters" method="post" action="${base}/webhooks/${w.id}/rotate-secret">
      ${tokenField(csrf)}
      <label
        >Keep the old secret signing for
        <select name="grace">
          ${ROTATION_GRACES.map(([seconds, name]) =>
            seconds === defaultGrace
              ? html`<option value="${seconds}" selected>${name} (default)</option>`
              : html`<option value="${seconds}">${name}</option>`,
          )}
        </select></label
      >
      <button>Rotate secret</button>
    </form>`;
}

/** A hold in seconds, as people say it. */
function holdText(seconds: number): string {
  if (seconds % 86_400 === 0) return `${seconds / 86_400} d`;
  if (seconds % 3_600 === 0) return `${seconds / 3_600} h`;
  if (seconds % 60 === 0) return `${seconds / 60} min`;
  return `${seconds} s`;
}
