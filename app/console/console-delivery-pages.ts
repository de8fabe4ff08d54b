import { html } from "hono/html";
import type { z } from "zod";
import type { dispatchDetailSchema, dispatchSchema, recoverySchema } from "../routes/v3/dispatch-schemas.ts";
import type { eventTypeSchema } from "../routes/v3/webhook-event-types.ts";
import type { webhookHealthSchema } from "../routes/v3/webhook-health.ts";
import { layout, tokenField, when, type PageContext } from "./console-layout.ts";
import { liveEvery } from "./console-live.ts";

type Dispatch = z.output<typeof dispatchSchema>;
type DispatchDetail = z.output<typeof dispatchDetailSchema>;
type Recovery = z.output<typeof recoverySchema>;
type Health = z.input<typeof webhookHealthSchema>;

/** A delivery that may still change: waiting for its first attempt or for a retry. */
const stillOpen = (status: string) => status === "pending" || status === "error";

/** The recovery windows the console offers, in hours back from now. */
export const RECOVERY_WINDOWS_HOURS = [1, 24, 24 * 7] as const;

/**
 * The action a dispatch offers, named for what it does: a delivered event is
 * sent again (Resend), a failed one starts its retries over now (Retry now);
 * a pending one is already on its way and offers nothing.
 */
export function dispatchAction(d: Dispatch, context: PageContext, back: string) {
  if (d.status === "pending") return "";
  const { base, csrf } = context;
  const label = d.status === "success" ? "Resend" : "Retry now";
  return html`<form class="inline" method="post" action="${base}/dispatches/${d.id}/retry">
    ${tokenField(csrf)}<input type="hidden" name="back" value="${back}" /><button aria-label="${label} ${d.event.id}">
      ${label}
    </button>
  </form>`;
}

function headersBlock(headers: Record<string, string>) {
  return html`<pre>
${Object.entries(headers)
      .map(([name, value]) => `${name}: ${value}`)
      .join("\n")}</pre>`;
}

export function dispatchPage(input: { dispatch: DispatchDetail; notice?: string | undefined; context: PageContext }) {
  const d = input.dispatch;
  const base = input.context.base;
  const body = JSON.stringify(d.payload, null, 2);
  // While it may still change, its state and attempts keep themselves current.
  const live = stillOpen(d.status);
  return layout(
    `Delivery of ${d.event.type}`,
    html`<div id="delivery-state" ${liveEvery(live, 2)}>
        <dl class="facts">
          <dt>Event</dt>
          <dd><code>${d.event.id}</code></dd>
          <dt>Sequence</dt>
          <dd>${d.sequence === null ? "— (a test event)" : html`#${d.sequence} in this webhook's stream`}</dd>
          <dt>Webhook</dt>
          <dd>
            <a href="${base}/webhooks/${d.webhook}"><code>${d.webhook}</code></a>
          </dd>
          <dt>Status</dt>
          <dd class="status-${d.status}">${d.status}${d.lastError ? html` (${d.lastError})` : ""}</dd>
          ${
            d.heldBehind
              ? html`<dt>Waiting for</dt>
                  <dd>
                    <code>${d.heldBehind}</code>, an earlier event of the same resource: this webhook delivers a
                    resource's events in order
                  </dd>`
              : ""
          }
          <dt>Run</dt>
          <dd>${d.run} · ${d.attemptCount} attempts in this run</dd>
          <dt>Next attempt</dt>
          <dd>${when(d.nextAttempt)}</dd>
          <dt>Created</dt>
          <dd>${when(d.created)}</dd>
          <dt>Finished</dt>
          <dd>${when(d.completed)}</dd>
        </dl>
        <div class="actions">
          ${dispatchAction(d, input.context, `dispatches/${d.id}`)}
          ${
            d.status === "success"
              ? html`<small>Resend delivers this event again, as a new run with a fresh signature.</small>`
              : d.status === "pending"
                ? html`<small>This delivery is on its way.</small>`
                : html`<small>Retry now starts the retry schedule over, with a first attempt right away.</small>`
          }
        </div>
      </div>
      <h2>Body</h2>
      <p>The same bytes are POSTed on every attempt (shown indented here).</p>
      <pre aria-label="Request body">${body}</pre>
      <h2>Attempts</h2>
      <div id="delivery-attempts" ${liveEvery(live, 2)}>
        ${d.attempts.length === 0 ? html`<p>No attempt yet.</p>` : ""}
        ${[...d.attempts].reverse().map(
          (a) =>
            html`<section class="attempt" aria-label="Run ${a.run}, attempt ${a.attempt}">
              <h3>
                Run ${a.run}, attempt ${a.attempt}:
                <span class="status-${a.outcome === "success" ? "success" : "error"}">${a.outcome}</span>
              </h3>
              <dl class="facts">
                <dt>Sent</dt>
                <dd>${when(a.started)}</dd>
                <dt>Response status</dt>
                <dd>${a.statusCode ?? "no answer"}</dd>
                <dt>Duration</dt>
                <dd>${a.durationMs} ms</dd>
                <dt>Error class</dt>
                <dd>${a.errorClass ?? "—"}${a.errorMessage ? html`: ${a.errorMessage}` : ""}</dd>
                <dt>Next attempt</dt>
                <dd>${when(a.nextAttempt)}</dd>
                <dt>Signature</dt>
                <dd>
                  ${a.signature.scheme}, timestamp ${a.signature.timestamp}, ${a.signature.signatures}
                  signature${a.signature.signatures === 1 ? "" : "s"}${a.signature.mode ? html`, test mode ${a.signature.mode}` : ""}
                </dd>
              </dl>
              <h4>Request headers</h4>
              ${headersBlock(a.requestHeaders)}
              <h4>Response excerpt</h4>
              <pre aria-label="Response excerpt">${a.responseExcerpt ?? "(none)"}</pre>
            </section>`,
        )}
      </div>`,
    { signedIn: true, ...input.context, notice: input.notice, live },
  );
}

/**
 * A recovery's progress as the ledger has it. It is finished only when every
 * delivery it started again has ended (delivered or failed again), not when
 * the requeueing is done; until then its progress keeps itself current
 * (`liveEvery`), and says why deliveries wait when the webhook is paused or
 * its endpoint's circuit breaker is open.
 */
export function recoveryPage(input: {
  recovery: Recovery;
  webhookStatus: string | undefined;
  health: Health | undefined;
  context: PageContext;
}) {
  const r = input.recovery;
  const base = input.context.base;
  const inFlight = r.requeued - r.delivered - r.failed;
  const finished = recoveryFinished(r);
  const state =
    r.status === "pending"
      ? "Waiting to start"
      : r.status === "running"
        ? "Putting deliveries back in the queue"
        : finished
          ? "Finished"
          : "Requeued; deliveries in progress";
  const breaker = input.health?.breaker;
  const waiting = finished
    ? ""
    : input.webhookStatus === "paused" || input.webhookStatus === "disabled"
      ? html`<p>Deliveries wait: the webhook is ${input.webhookStatus}. They go out once it is active again.</p>`
      : breaker && breaker.state !== "closed"
        ? html`<p>
            Deliveries wait: the endpoint did not answer, so its circuit breaker is
            ${breaker.state}${breaker.openUntil ? html` until ${when(breaker.openUntil)}` : ""}; one attempt goes
            through then to find out whether it is back.
          </p>`
        : "";
  return layout(
    "Recovery",
    html`<div id="recovery-progress" ${liveEvery(!finished, 2)}>
        <p role="status">
          <strong id="recovery-state">${state}.</strong>
          ${r.total === null ? "Counting the failed deliveries in the window…" : html`Requeued <span id="recovery-requeued">${r.requeued}</span> of <span id="recovery-total">${r.total}</span>;`}
          delivered <span id="recovery-delivered">${r.delivered}</span>, failed again
          <span id="recovery-failed">${r.failed}</span>, still in progress
          <span id="recovery-in-flight">${inFlight}</span>.
        </p>
        ${waiting}
        <dl class="facts">
          <dt>Window</dt>
          <dd>${r.since} to ${r.until} (fixed when the recovery started)</dd>
          <dt>Started</dt>
          <dd>${when(r.started)}</dd>
          <dt>Requeueing done</dt>
          <dd>${when(r.completed)}</dd>
        </dl>
        <p>${finished ? "" : html`This page keeps itself current until every delivery has ended. `}</p>
      </div>
      <p>
        <a href="${base}/webhooks/${r.webhook}?status=exhausted">Failed deliveries</a> ·
        <a href="${base}/webhooks/${r.webhook}#recoveries">The webhook's recoveries</a> ·
        <a href="${base}/webhooks/${r.webhook}">Back to the webhook</a>
      </p>`,
    { signedIn: true, ...input.context, live: !finished },
  );
}

/** Every delivery a recovery started again has ended. */
export const recoveryFinished = (r: Recovery) => r.status === "completed" && r.requeued - r.delivered - r.failed === 0;

/** A webhook's recoveries, newest first: what each covered and how far it got, linked to its page. */
export function recoveriesList(recoveries: Recovery[], context: PageContext) {
  if (recoveries.length === 0) return html`<p>No recovery yet.</p>`;
  return html`<ul>
    ${recoveries.map((r) => {
      const finished = recoveryFinished(r);
      return html`<li>
        <a href="${context.base}/webhooks/${r.webhook}/recoveries/${r.id}">${finished ? "Finished" : "Running"}</a>,
        started ${when(r.started ?? r.created)}:
        ${r.total === null ? "counting" : html`${r.requeued} of ${r.total} requeued`}, ${r.delivered} delivered,
        ${r.failed} failed again
      </li>`;
    })}
  </ul>`;
}

export function eventTypesPage(input: { eventTypes: Array<z.output<typeof eventTypeSchema>>; context: PageContext }) {
  return layout(
    "Event types",
    html`<p>Every event a webhook can subscribe to, with the body its endpoint receives.</p>
      ${input.eventTypes.map(
        (t) =>
          html`<section class="attempt" id="${t.id}">
            <h2>
              <code>${t.id}</code>${t.deprecated ? html` <small class="status-exhausted">deprecated</small>` : ""}
            </h2>
            <p>${t.description}</p>
            <p>
              <small>Resource <code>${t.resource}</code> · since ${t.since}</small>
            </p>
            <pre aria-label="Example payload of ${t.id}">${JSON.stringify(t.example, null, 2)}</pre>
          </section>`,
      )}`,
    { signedIn: true, ...input.context },
  );
}
