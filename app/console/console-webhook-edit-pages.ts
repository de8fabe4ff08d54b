import { html } from "hono/html";
import { hears } from "../../lib/webhook/catalogue/subscribable-events.ts";
import { FILTER_MAX_LENGTH } from "../../lib/webhook/outbound/webhook-filter.ts";
import { layout, tokenField, until, type PageContext } from "./console-layout.ts";
import type { EventType, Webhook } from "./console-webhook-pages.ts";

/** What the form sends: shown again as it was when the API refuses it. */
export interface WebhookFormValues {
  url: string;
  description: string;
  events: string[];
  /** As typed: empty for no filter. */
  filter: string;
  scheme?: string | undefined;
  /** Ticked: deliveries are also signed `v1a` with the account's ed25519 key. */
  asymmetricSignature: boolean;
}

/** What the Preview button found for the typed filter: its count over recent events, or why it was refused. */
export type FilterPreviewResult = { matched: number; of: number } | { none: true } | { refused: string };

/** The preview as a sentence, under the filter field. */
function previewLine(preview: FilterPreviewResult) {
  if ("refused" in preview) return html`<p class="warning" role="alert" id="filter-preview">${preview.refused}</p>`;
  const text =
    "none" in preview
      ? "No filter: every event it subscribes to is sent."
      : preview.of === 0
        ? "No events of these types in the delivery log yet to preview it on."
        : `Would have matched ${preview.matched} of the last ${preview.of} event${preview.of === 1 ? "" : "s"}.`;
  return html`<p role="status" id="filter-preview">${text}</p>`;
}

const SCHEMES = [
  ["hooklane-v1", "hooklane-v1 (Stripe-compatible)"],
  ["standard-webhooks", "Standard Webhooks"],
] as const;

/**
 * Create or edit: the same form, filled in with the webhook when editing,
 * and with what was sent when it was refused. The checkboxes offer only the
 * events the webhook's scope hears: an account webhook never hears an event
 * no account owns.
 */
export function webhookFormPage(input: {
  webhook?: Webhook;
  values?: WebhookFormValues | undefined;
  eventTypes: EventType[];
  error?: string | undefined;
  /** Only after the edit form's Preview button. */
  preview?: FilterPreviewResult | undefined;
  context: PageContext;
}) {
  const w = input.webhook;
  const values: WebhookFormValues = input.values ?? {
    url: w?.url ?? "",
    description: w?.description ?? "",
    events: w?.events ?? [],
    filter: w?.filter ?? "",
    scheme: w?.scheme,
    asymmetricSignature: w?.asymmetricSignature ?? false,
  };
  const chosen = new Set(values.events);
  const audience = w && w.account === null ? "global" : "account";
  const offered = input.eventTypes.filter((t) => hears(audience, t.ownerKind));
  const base = input.context.base;
  const action = w ? `${base}/webhooks/${w.id}/edit` : `${base}/webhooks`;
  const filterable = offered.filter((t) => t.attributes.length > 0);
  return layout(
    w ? "Edit webhook" : "New webhook",
    html`${input.error ? html`<p class="warning" role="alert">${input.error}</p>` : ""}
      <form method="post" action="${action}">
        ${tokenField(input.context.csrf)}
        <div class="field">
          <label for="url">Endpoint URL</label>
          <input
            id="url"
            name="url"
            type="url"
            required
            value="${values.url}"
            placeholder="https://example.com/hooks"
          />
        </div>
        <div class="field">
          <label for="description">Description</label>
          <input id="description" name="description" type="text" maxlength="500" value="${values.description}" />
        </div>
        <fieldset>
          <legend>Events to send</legend>
          <label
            ><input type="checkbox" name="events" value="*" ${chosen.has("*") ? "checked" : ""} /> All events
            (<code>*</code>)</label
          >
          ${offered.map(
            (t) =>
              html`<br /><label
                  ><input type="checkbox" name="events" value="${t.id}" ${chosen.has(t.id) ? "checked" : ""} />
                  <code>${t.id}</code></label
                >`,
          )}
          ${
            audience === "account" && offered.length < input.eventTypes.length
              ? html`<p>
                  Events that belong to no account
                  (${input.eventTypes
                    .filter((t) => !hears(audience, t.ownerKind))
                    .map((t, i) => html`${i ? ", " : ""}<code>${t.id}</code>`)})
                  reach only global webhooks.
                </p>`
              : ""
          }
        </fieldset>
        <div class="field">
          <label for="filter">Filter</label>
          <input
            id="filter"
            name="filter"
            type="text"
            maxlength="${FILTER_MAX_LENGTH}"
            value="${values.filter}"
            placeholder='currency in ["EUR", "USD"]'
            aria-describedby="filter-hint${input.preview ? " filter-preview" : ""}"
          />
          <small id="filter-hint"
            >Empty: every event it subscribes to. Otherwise only the events whose attributes match, e.g.
            <code>currency in ["EUR", "USD"] and not status == "void"</code> (<code>==</code>, <code>!=</code>,
            <code>in</code>, <code>exists(name)</code>, <code>and</code>, <code>or</code>, <code>not</code>); every
            attribute named must belong to every event chosen.
            ${
              filterable.length
                ? html`Attributes:
                  ${filterable.map((t, i) => html`${i ? "; " : ""}<code>${t.id}</code>: ${t.attributes.join(", ")}`)}.`
                : "No event type offered here declares attributes."
            }</small
          >
        </div>
        ${input.preview ? previewLine(input.preview) : ""}
        <div class="field">
          <label for="scheme">Signature scheme</label>
          <select id="scheme" name="scheme">
            ${SCHEMES.map(
              ([value, label]) =>
                html`<option value="${value}" ${values.scheme === value ? "selected" : ""}>${label}</option>`,
            )}
          </select>
        </div>
        <div class="field">
          <label
            ><input
              type="checkbox"
              name="asymmetricSignature"
              value="true"
              ${values.asymmetricSignature ? "checked" : ""}
            />
            Also sign with the account's ed25519 key (v1a), verifiable without a secret</label
          >
        </div>
        <p>
          <button>${w ? "Save changes" : "Create webhook"}</button>
          ${
            // Second, so that Enter in a field still saves; no URL check, so a half-typed form can still preview.
            w ? html`<button formaction="${action}/preview" formnovalidate>Preview filter</button>` : ""
          }
        </p>
      </form>`,
    { signedIn: true, ...input.context },
  );
}

/**
 * The one time a secret is shown: after creating a webhook, or rotating its
 * secret. Reached by a redirect, so reloading it runs nothing again; without
 * `secret` it says the secret was shown already.
 */
export function secretPage(input: {
  webhook: Webhook;
  secret?: string | undefined;
  rotated: boolean;
  context: PageContext;
}) {
  const { webhook: w, secret, rotated } = input;
  const base = input.context.base;
  if (secret === undefined) {
    return layout(
      "Secret already shown",
      html`<p>
          This signing secret was shown once and is not shown again: only its encrypted form is kept. If it was not
          copied, rotate the secret on the webhook's page to get a new one.
        </p>
        <p><a href="${base}/webhooks/${w.id}">Continue to the webhook</a></p>`,
      { signedIn: true, ...input.context },
    );
  }
  return layout(
    rotated ? "Secret rotated" : "Webhook created",
    html`<p class="warning" role="alert">
        Copy this signing secret now: it is shown only this once, and only its encrypted form is kept.
        ${
          !rotated
            ? ""
            : w.previousSecretExpires
              ? html`The previous secret keeps signing alongside it until ${until(w.previousSecretExpires)}.`
              : "The previous secret no longer signs."
        }
      </p>
      <p><label for="secret">Signing secret</label></p>
      <p><code class="secret" id="secret">${secret}</code></p>
      <p><a href="${base}/webhooks/${w.id}">Continue to the webhook</a></p>`,
    { signedIn: true, ...input.context },
  );
}

export function deletePage(input: { webhook: Webhook; context: PageContext }) {
  const w = input.webhook;
  const base = input.context.base;
  return layout(
    "Delete webhook",
    html`<p>
        Delete <code>${w.url}</code> (<code>${w.id}</code>)? Nothing more is sent to it and its undelivered events are
        skipped; its delivery log stays readable through the API until the ledger's retention removes it. This cannot be
        undone.
      </p>
      <form method="post" action="${base}/webhooks/${w.id}/delete">
        ${tokenField(input.context.csrf)}
        <button class="danger">Delete this webhook</button>
        <a href="${base}/webhooks/${w.id}">Cancel</a>
      </form>`,
    { signedIn: true, ...input.context },
  );
}
