import { z } from "zod";
import { ApiError } from "../../../lib/api/problem.ts";
import { iso, isoOrNull, timestamp } from "../../../lib/api/timestamps.ts";
import { CallbackUrlError, validateCallbackUrl } from "../../../lib/webhook/outbound/webhook-callback-url.ts";
import {
  customHeadersInput,
  customHeadersOutput,
  customHeadersRefusal,
  headerNamed,
  presentHeaders,
  type CustomHeadersInput,
  type StoredHeaders,
} from "../../../lib/webhook/outbound/webhook-custom-headers.ts";
import {
  CONSENT_STATES,
  SIGNATURE_SCHEMES,
  WEBHOOK_ORDERINGS,
  WEBHOOK_STATUSES,
  type Webhook,
} from "../../../lib/db/schema.ts";
import { changesSomething, idParams } from "./resource-fields.ts";
import { CATALOGUE, catalogueByInternal } from "../../../lib/webhook/catalogue/webhook-event-catalogue.ts";
import { hears, type WebhookAudience } from "../../../lib/webhook/catalogue/subscribable-events.ts";
import {
  FILTER_MAX_LENGTH,
  FilterSyntaxError,
  filterPath,
  parseFilter,
  undeclaredAttribute,
} from "../../../lib/webhook/outbound/webhook-filter.ts";

export const webhookIdParams = idParams("The webhook's id (`wh_…`).");

/** What `scheme` means, wherever it is read or set. */
/** What `ordering` and `orderingHoldMax` mean, wherever they are read or set. */
const ORDERING =
  "`resource`: events about the same resource (the body's `data.object` and `data.id`) are delivered one at a time, in `sequence` order, while events about other resources go on in parallel; `none`: every event goes as soon as it can (retries may overtake). Caps, rate limits, the breaker and pauses apply as ever.";
const ORDERING_HOLD_MAX =
  'Seconds (60 to 7 days; 3600 unless set). With `resource` ordering, how long an event that keeps failing holds back the later events of its resource, from its first failure. Once that has passed, or once it is exhausted, the next event goes, its body naming the events it overtook (`"ordering":{"skipped":[…]}`).';

/** What `filter` means, wherever it is read or set. */
export const FILTER =
  'Which of its events the webhook gets, by the attributes the catalogue declares for them (`GET /v3/webhook-event-types` lists each type\'s `attributes`), read when the event was published; null: every event it subscribes to. An expression: `name == "value"`, `name != "value"`, `name in ["a", "b"]`, `exists(name)`, combined with `and`, `or`, `not` and parentheses (`not` binds tightest, then `and`, then `or`). Values are JSON strings compared exactly, as text; an attribute an event lacks or holds as null equals no value. Every attribute named must be declared by every event type the webhook hears. An event the filter does not match gets no dispatch: it is not in the delivery log and takes no `sequence` number. Example: `currency in ["EUR", "USD"] and not status == "void"`.';

/** What `asymmetricSignature` means, wherever it is read or set. */
const ASYMMETRIC =
  "With the `standard-webhooks` scheme: every delivery is also signed with the account's ed25519 key, as Standard Webhooks `v1a` (`webhook-signature: v1,… v1a,…`), naming the key in `webhook-key-id`. Receivers verify it from the account's published keys, `GET /webhook-keys/<account>/jwks.json` (`global` for global webhooks), holding no secret. Keys rotate with `POST /v3/webhook-signing-keys/rotate`.";

const CONSENT =
  "Endpoint consent, when the owning account requires it: before anything is sent to a new URL, the endpoint must answer an `OPTIONS` request carrying `WebHook-Request-Origin` with a 2xx and `WebHook-Allowed-Origin` naming that origin (or `*`). Null: none is asked (the account does not require it, a global webhook, or one created before its account required it).";

const SCHEME =
  "How deliveries are signed: `hooklane-v1` (a `Hooklane-Signature: t=…,v1=…` header, as Stripe signs) or `standard-webhooks` (`webhook-id`, `webhook-timestamp` and `webhook-signature`, per the Standard Webhooks specification).";

const EXAMPLE = {
  id: "wh_3e8a1f0c9b2d4e7f8a6c5b4d3e2f1a0b",
  object: "webhook",
  url: "https://example.com/hooks",
  events: ["payment-debt.created"],
  status: "active",
  scheme: "hooklane-v1",
  description: "Billing sync",
  headers: { "X-Team": "billing", "X-Api-Key": { secret: true } },
  filter: 'currency in ["EUR", "USD"]',
  asymmetricSignature: false,
  scope: "account",
  account: "acc_4b1f9e2c7d8a4e6f9b0c1d2e3f4a5b6c",
  disabledReason: null,
  rateLimit: null,
  heldEventMaxAge: null,
  ordering: "none",
  orderingHoldMax: 3600,
  breaker: { state: "closed", failures: 0, retry: null },
  statusChanged: "2026-12-01T09:30:00.000Z",
  previousSecretExpires: null,
  consent: {
    state: "granted",
    requested: "2026-12-01T09:30:00.000Z",
    granted: "2026-12-01T09:30:01.000Z",
    attempts: 1,
    lastRequest: "2026-12-01T09:30:00.000Z",
    lastError: null,
    nextRequest: null,
  },
  created: "2026-12-01T09:30:00.000Z",
  updated: "2026-12-01T09:30:00.000Z",
} as const;

export const webhookSchema = z
  .strictObject({
    id: z.string(),
    object: z.literal("webhook"),
    url: z.string().describe("Where deliveries are POSTed."),
    events: z.array(z.string()).describe("Event types heard, or `*` for all."),
    status: z.enum(WEBHOOK_STATUSES).describe("`disabled` is set by the system (410 Gone, or failing for days)."),
    scheme: z.enum(SIGNATURE_SCHEMES).describe(SCHEME),
    description: z.string().describe("Free text for people, e.g. what the endpoint is for; empty when none was given."),
    headers: customHeadersOutput,
    filter: z.string().nullable().describe(FILTER),
    asymmetricSignature: z.boolean().describe(ASYMMETRIC),
    scope: z
      .enum(["account", "global"])
      .describe("`account`: hears its account's events; `global` (no `account`): hears every account's events."),
    account: z.string().nullable().describe("The owning account (`acc_…`); null for a global webhook."),
    disabledReason: z
      .string()
      .nullable()
      .describe(
        "Why the system disabled it, e.g. `endpoint answered 410 Gone` or `every delivery failed for 7 days`; null unless `status` is `disabled`.",
      ),
    rateLimit: z
      .number()
      .int()
      .nullable()
      .describe("Deliveries per second at most; null: no limit of its own (the lane's caps still apply)."),
    heldEventMaxAge: z
      .number()
      .int()
      .nullable()
      .describe(
        "Seconds. When the webhook is made active again after a pause or a disable, events it held longer than this are skipped (status `skipped`), not delivered; null: every held event is delivered.",
      ),
    ordering: z.enum(WEBHOOK_ORDERINGS).describe(ORDERING),
    orderingHoldMax: z.number().int().describe(ORDERING_HOLD_MAX),
    breaker: z
      .strictObject({
        state: z
          .enum(["closed", "open", "half-open"])
          .describe(
            "`open`: the endpoint failed at the connection level (refused, DNS, TLS, timeout) too often in a row; its due deliveries wait, with no attempt charged, until `retry`. `half-open`: that time has come; the next delivery is a probe, and its answer closes the breaker or opens it again for longer.",
          ),
        failures: z.number().int().describe("Connection-level failures in a row; any HTTP answer resets them."),
        retry: timestamp.nullable().describe("When the open breaker lets its probe through."),
      })
      .describe("The endpoint's circuit breaker."),
    statusChanged: timestamp.describe("When `status` last changed; when it was created if it never did."),
    previousSecretExpires: timestamp.nullable().describe("While a rotation's previous secret still signs."),
    consent: z
      .strictObject({
        state: z
          .enum(CONSENT_STATES)
          .describe(
            "`pending`: nothing is sent to `url` (events are kept, and go once it consents) until the endpoint answers the consent request; `granted`: it did.",
          ),
        requested: timestamp.describe("When consent was first asked of this URL."),
        granted: timestamp.nullable().describe("When the endpoint consented."),
        attempts: z.number().int().describe("Consent requests sent to this URL."),
        lastRequest: timestamp.nullable().describe("When the last consent request was sent."),
        lastError: z
          .string()
          .nullable()
          .describe("Why the last answer was not consent, e.g. `answered HTTP 405: not the consent answer`."),
        nextRequest: timestamp
          .nullable()
          .describe(
            "When the next request goes on its own; null while pending: none will (ask again with `POST /v3/webhooks/:id/request-consent`).",
          ),
      })
      .nullable()
      .describe(CONSENT),
    created: timestamp,
    updated: timestamp,
  })
  .meta({ id: "Webhook", examples: [EXAMPLE] });

export const webhookWithSecretSchema = webhookSchema
  .extend({ secret: z.string().describe("`whsec_…`: shown this once; only its encrypted form is kept.") })
  .meta({
    id: "WebhookWithSecret",
    examples: [{ ...EXAMPLE, secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw7Z4lJVKq6n8=" }],
  });

const url = z.string().min(1).max(2_048).describe("https: (plain http: only for allowlisted hosts).");
const events = z.array(z.string().min(1).max(200)).min(1).max(200).describe('Event types, or `["*"]` for all.');
const description = z.string().max(500).describe("Free text for people, e.g. what the endpoint is for.");
const filter = z.string().min(1).max(FILTER_MAX_LENGTH).nullable().describe(FILTER);
const heldEventMaxAge = z
  .number()
  .int()
  .min(60)
  .max(30 * 86_400)
  .nullable()
  .describe("Seconds (60 to 30 days): on re-enable, skip held events older than this; null: deliver them all.");
const ordering = z.enum(WEBHOOK_ORDERINGS).describe(ORDERING);
const orderingHoldMax = z
  .number()
  .int()
  .min(60)
  .max(7 * 86_400)
  .describe(ORDERING_HOLD_MAX);
const rateLimit = z
  .number()
  .int()
  .min(1)
  .max(10_000)
  .nullable()
  .describe("Deliveries per second at most (null: no limit of its own).");

export const createWebhookBody = z
  .strictObject({
    url,
    events,
    description: description.default(""),
    headers: customHeadersInput.default({}),
    filter: filter.default(null),
    scheme: z.enum(SIGNATURE_SCHEMES).default("hooklane-v1").describe(SCHEME),
    asymmetricSignature: z.boolean().default(false).describe(ASYMMETRIC),
    rateLimit: rateLimit.default(null),
    heldEventMaxAge: heldEventMaxAge.default(null),
    ordering: ordering.default("none"),
    orderingHoldMax: orderingHoldMax.default(3_600),
    scope: z
      .enum(["account", "global"])
      .default("account")
      .describe("`global` hears every account's events; admins only."),
  })
  .meta({ examples: [{ url: "https://example.com/hooks", events: ["payment-debt.created"] }] });

export const updateWebhookBody = z
  .strictObject({
    url,
    events,
    description,
    headers: customHeadersInput.describe(
      `${customHeadersInput.description} Replaces the whole set; \`{"secret": true}\` keeps a stored secret's value.`,
    ),
    filter: filter.describe(`${FILTER} Applies to events routed from then on.`),
    scheme: z.enum(SIGNATURE_SCHEMES).describe(`${SCHEME} Takes effect from the next attempt.`),
    asymmetricSignature: z.boolean().describe(`${ASYMMETRIC} Takes effect from the next attempt.`),
    rateLimit,
    heldEventMaxAge,
    ordering: ordering.describe(
      `${ORDERING} Applies to events routed from then on; back to \`none\`, nothing waits any more.`,
    ),
    orderingHoldMax,
    status: z
      .enum(["active", "paused"])
      .describe("Pause to hold deliveries (events are kept); `active` resumes or re-enables a disabled webhook."),
  })
  .partial()
  .refine(...changesSomething)
  .meta({ examples: [{ status: "paused" }] });

/** The public shape of a webhook: never its secret. */
export function presentWebhook(row: Webhook): z.output<typeof webhookSchema> {
  return {
    id: row.id,
    object: "webhook",
    url: row.url,
    events: row.events,
    status: row.status,
    scheme: row.scheme,
    description: row.description,
    headers: presentHeaders(row.headers),
    filter: row.filter,
    asymmetricSignature: row.asymmetricSignature,
    scope: row.account === null ? "global" : "account",
    account: row.account,
    disabledReason: row.disabledReason,
    rateLimit: row.rateLimit,
    heldEventMaxAge: row.heldEventMaxAge,
    ordering: row.ordering,
    orderingHoldMax: row.orderingHoldMax,
    breaker: presentBreaker(row),
    statusChanged: iso(row.statusChangedAt),
    previousSecretExpires:
      row.previousSecretExpiresAt && row.previousSecretExpiresAt > new Date()
        ? isoOrNull(row.previousSecretExpiresAt)
        : null,
    consent: presentConsent(row),
    created: iso(row.createdAt),
    updated: iso(row.updatedAt),
  };
}

function presentConsent(row: Webhook): z.output<typeof webhookSchema>["consent"] {
  if (row.consentState === null || row.consentRequestedAt === null) return null;
  return {
    state: row.consentState,
    requested: iso(row.consentRequestedAt),
    granted: isoOrNull(row.consentGrantedAt),
    attempts: row.consentAttempts,
    lastRequest: isoOrNull(row.consentSentAt),
    lastError: row.consentError,
    nextRequest: row.consentState === "pending" ? isoOrNull(row.consentNextAt) : null,
  };
}

/**
 * The circuit breaker as the lane keeps it: open until `breaker_open_until`
 * (a probe in flight holds it a lease ahead), half-open once that has passed
 * and no probe answered yet, closed when the column is empty.
 */
function presentBreaker(row: Webhook): z.output<typeof webhookSchema>["breaker"] {
  const until = row.breakerOpenUntil;
  if (!until) return { state: "closed", failures: row.breakerFailures, retry: null };
  return { state: until > new Date() ? "open" : "half-open", failures: row.breakerFailures, retry: iso(until) };
}

/** Checks a callback URL against the policy; a refusal is a 422 naming `url`. */
export function assertCallbackUrl(url: string, allowedHosts: readonly string[]): void {
  try {
    validateCallbackUrl(url, { allowedHosts });
  } catch (error) {
    if (!(error instanceof CallbackUrlError)) throw error;
    throw new ApiError(422, "Unprocessable Content", `url: ${error.message}`, {
      errors: [{ field: "url", message: error.message }],
    });
  }
}

/** Checks a `headers` input (for the brand signatures go under): a refusal is a 422 naming the header. */
export function assertCustomHeaders(input: CustomHeadersInput, brand: string, stored?: StoredHeaders): void {
  const refusal = customHeadersRefusal(input, brand, stored);
  if (refusal) {
    throw new ApiError(422, "Unprocessable Content", `${refusal.field}: ${refusal.message}`, { errors: [refusal] });
  }
}

/** A body as the audit log keeps it: a secret header's value left out. */
export function auditedBody<T extends { headers?: CustomHeadersInput | undefined }>(body: T): T {
  if (!body.headers) return body;
  const headers = Object.fromEntries(
    Object.entries(body.headers).map(([name, given]) => [name, typeof given === "string" ? given : { secret: true }]),
  );
  return { ...body, headers } as T;
}

/**
 * A secret header goes only where it was given for: a new URL on another origin takes the secret headers' values
 * again (in `headers`, with the URL), or the update is a 422 naming them.
 */
export function assertSecretsFollowUrl(
  before: { url: string; headers: StoredHeaders },
  body: { url?: string | undefined; headers?: CustomHeadersInput | undefined },
): void {
  if (body.url === undefined || URL.parse(body.url)?.origin === URL.parse(before.url)?.origin) return;
  const kept = Object.keys(before.headers).filter((name) => {
    if (!("sealed" in before.headers[name]!)) return false;
    if (body.headers === undefined) return true;
    const given = headerNamed(body.headers, name);
    return typeof given === "object" && given.value === undefined;
  });
  if (kept.length === 0) return;
  const message = `a new origin takes the secret headers' values again (${kept.join(", ")}): give them in \`headers\` with the URL`;
  throw new ApiError(422, "Unprocessable Content", `url: ${message}`, { errors: [{ field: "url", message }] });
}

/**
 * Checks a filter against the event types a webhook hears (`*`: every type
 * its audience can hear) and compiles it; a filter that does not parse is a
 * 422 naming the position, one naming an attribute a type does not declare a
 * 422 naming both. Null stays null.
 */
export function compileFilter(
  given: string | null,
  events: readonly string[],
  audience: WebhookAudience,
): { filter: string | null; filterPath: string | null } {
  if (given === null) return { filter: null, filterPath: null };
  const refuse = (message: string) =>
    new ApiError(422, "Unprocessable Content", `filter: ${message}`, { errors: [{ field: "filter", message }] });
  let parsed;
  try {
    parsed = parseFilter(given);
  } catch (error) {
    if (error instanceof FilterSyntaxError) throw refuse(error.message);
    throw error;
  }
  const entries = events.includes("*")
    ? CATALOGUE.filter((entry) => !entry.deprecated && hears(audience, entry.owner.kind))
    : events.flatMap((name) => catalogueByInternal(name) ?? []);
  const undeclared = undeclaredAttribute(parsed, entries);
  if (undeclared) throw refuse(undeclared);
  return { filter: given, filterPath: filterPath(parsed) };
}

/** `asymmetricSignature` goes with the standard-webhooks scheme only (v1a is its version): a 422 naming it otherwise. */
export function assertAsymmetricScheme(asymmetric: boolean, scheme: string): void {
  if (!asymmetric || scheme === "standard-webhooks") return;
  const message = "ed25519 signatures (v1a) are Standard Webhooks': set `scheme` to `standard-webhooks` with them";
  throw new ApiError(422, "Unprocessable Content", `asymmetricSignature: ${message}`, {
    errors: [{ field: "asymmetricSignature", message }],
  });
}
