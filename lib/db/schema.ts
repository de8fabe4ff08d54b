import { sql } from "drizzle-orm";
import {
  bigint,
  bigserial,
  boolean,
  check,
  customType,
  doublePrecision,
  index,
  integer,
  json,
  jsonb,
  numeric,
  pgTable,
  primaryKey,
  smallint,
  text,
  timestamp,
  uniqueIndex,
} from "drizzle-orm/pg-core";
import type { ExampleBody, OwnerStrategy } from "../webhook/catalogue/catalogue-entry.ts";
import type { StoredHeaders } from "../webhook/outbound/webhook-custom-headers.ts";

/** An SQL/JSON path (`jsonb @@ jsonpath`), kept parsed: a webhook filter's compiled form. */
const jsonpath = customType<{ data: string }>({ dataType: () => "jsonpath" });

const createdAt = () => timestamp("created_at", { withTimezone: true, mode: "date" }).notNull().defaultNow();
const prefixedId = (prefix: string) =>
  text("id")
    .primaryKey()
    .default(sql.raw(`'${prefix}_' || replace(gen_random_uuid()::text, '-', '')`));

// ---------------------------------------------------------------------------
// The API's own resources: the mutations that become events.
// ---------------------------------------------------------------------------

export const account = pgTable("account", {
  id: prefixedId("acc"),
  name: text("name").notNull(),
  email: text("email"),
  /**
   * Endpoint consent: a webhook of this account is sent nothing at a URL until the endpoint has answered the consent
   * request (`webhook.consent_state`). Set by an admin only; new accounts take `WEBHOOK_ENDPOINT_CONSENT`.
   */
  endpointConsent: boolean("endpoint_consent").notNull().default(false),
  createdAt: createdAt(),
});
export type Account = typeof account.$inferSelect;

export const paymentDebt = pgTable(
  "payment_debt",
  {
    id: prefixedId("pd"),
    account: text("account")
      .notNull()
      .references(() => account.id),
    amount: numeric("amount", { precision: 14, scale: 2 }).notNull(),
    currency: text("currency").notNull(),
    status: text("status").notNull().default("open"),
    createdAt: createdAt(),
  },
  (t) => [index("payment_debt_account_idx").on(t.account)],
);
export type PaymentDebt = typeof paymentDebt.$inferSelect;

export const subscription = pgTable(
  "subscription",
  {
    id: prefixedId("sub"),
    account: text("account")
      .notNull()
      .references(() => account.id),
    plan: text("plan").notNull(),
    status: text("status").notNull().default("active"),
    createdAt: createdAt(),
  },
  (t) => [index("subscription_account_idx").on(t.account)],
);
export type Subscription = typeof subscription.$inferSelect;

export const subscriptionHistory = pgTable(
  "subscription_history",
  {
    id: prefixedId("sh"),
    subscription: text("subscription")
      .notNull()
      .references(() => subscription.id),
    change: text("change").notNull(),
    createdAt: createdAt(),
  },
  (t) => [index("subscription_history_subscription_idx").on(t.subscription)],
);
export type SubscriptionHistory = typeof subscriptionHistory.$inferSelect;

export const generalAddress = pgTable("general_address", {
  id: prefixedId("addr"),
  line1: text("line1").notNull(),
  city: text("city").notNull(),
  country: text("country").notNull(),
  createdAt: createdAt(),
});
export type GeneralAddress = typeof generalAddress.$inferSelect;

// ---------------------------------------------------------------------------
// Webhooks: the catalogue, subscriptions and the delivery ledger.
// ---------------------------------------------------------------------------

/**
 * The catalogue as synced into the database (`npm run catalogue:sync`): what
 * subscribers see and may listen to. A deprecated type is never deleted; it
 * takes no new subscriptions and gets no deliveries.
 */
export const webhookEventType = pgTable("webhook_event_type", {
  internal: text("internal").primaryKey(),
  method: text("method").notNull(),
  route: text("route").notNull(),
  resource: text("resource").notNull(),
  ownerKind: text("owner_kind").$type<OwnerStrategy["kind"]>().notNull(),
  description: text("description").notNull(),
  /** `json`, not `jsonb`: it keeps the body's key order, as subscribers receive it. */
  example: json("example").$type<ExampleBody>().notNull(),
  since: text("since").notNull(),
  deprecated: boolean("deprecated").notNull().default(false),
  /** When a sync first brought it into this database. */
  createdAt: createdAt(),
  updatedAt: timestamp("updated_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
});
export type WebhookEventType = typeof webhookEventType.$inferSelect;

/**
 * `listening`: the ephemeral webhook of a `listen` session, whose deliveries
 * travel to the CLI over the stream it holds open; the lane never claims it.
 */
export const WEBHOOK_STATUSES = ["active", "paused", "disabled", "listening"] as const;
export type WebhookStatus = (typeof WEBHOOK_STATUSES)[number];
/** Where a webhook's endpoint stands on consent (`webhook.consent_state`); null: none asked for. */
export const CONSENT_STATES = ["pending", "granted"] as const;
export type ConsentState = (typeof CONSENT_STATES)[number];
export const WEBHOOK_ORDERINGS = ["none", "resource"] as const;
export type WebhookOrdering = (typeof WEBHOOK_ORDERINGS)[number];

export const SIGNATURE_SCHEMES = ["hooklane-v1", "standard-webhooks"] as const;
export type SignatureScheme = (typeof SIGNATURE_SCHEMES)[number];

export const webhook = pgTable(
  "webhook",
  {
    id: prefixedId("wh"),
    /** Owning account; null for a global (admin) webhook that hears every account. */
    account: text("account"),
    url: text("url").notNull(),
    /**
     * Scheme, host and port of `url`: the lane caps deliveries in flight per
     * origin, so one slow server cannot take every slot through many webhooks.
     */
    origin: text("origin")
      .notNull()
      .generatedAlwaysAs(sql`coalesce(lower(substring(url from '^[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*')), url)`),
    events: text("events").array().notNull(),
    status: text("status").$type<WebhookStatus>().notNull().default("active"),
    scheme: text("scheme").$type<SignatureScheme>().notNull().default("hooklane-v1"),
    description: text("description").notNull().default(""),
    /** Headers sent on every attempt, by name: plain values as they are, secret ones sealed like the secret. */
    headers: jsonb("headers").$type<StoredHeaders>().notNull().default({}),
    /**
     * Which events it gets, over their catalogue attributes (`currency in ["EUR"]`), as given; null: all it
     * subscribes to. `filter_path` is the same filter compiled to an SQL/JSON path, which routing evaluates.
     */
    filter: text("filter"),
    filterPath: jsonpath("filter_path"),
    /**
     * With the standard-webhooks scheme: every delivery is also signed with its account's ed25519 key (`v1a`,
     * `webhook_signing_key`), which receivers verify from the account's published keys, holding no secret.
     */
    asymmetricSignature: boolean("asymmetric_signature").notNull().default(false),
    /**
     * Endpoint consent for `url`: null, none asked for (its account does not require it, a global webhook, a listen
     * session, or one created before its account required it); `pending`, nothing is sent to it (events are kept)
     * until the endpoint answers the consent request; `granted`, it answered. A new URL asks again.
     */
    consentState: text("consent_state").$type<ConsentState>(),
    /** When the consent request for this URL was first due (pending since), and when it was granted. */
    consentRequestedAt: timestamp("consent_requested_at", { withTimezone: true, mode: "date" }),
    consentGrantedAt: timestamp("consent_granted_at", { withTimezone: true, mode: "date" }),
    /** Requests sent for this URL, when the last one went and why it was not an answer; when the next is due. */
    consentAttempts: integer("consent_attempts").notNull().default(0),
    consentSentAt: timestamp("consent_sent_at", { withTimezone: true, mode: "date" }),
    consentError: text("consent_error"),
    /** Null while pending: no more requests are sent on their own (asking again is `request-consent`). */
    consentNextAt: timestamp("consent_next_at", { withTimezone: true, mode: "date" }),
    /** The signing secret, encrypted (compact JWE); never stored in clear. */
    secretSealed: text("secret_sealed").notNull(),
    /** The previous secret during a rotation; signs as the second v1 until it expires. */
    previousSecretSealed: text("previous_secret_sealed"),
    previousSecretExpiresAt: timestamp("previous_secret_expires_at", { withTimezone: true, mode: "date" }),
    disabledReason: text("disabled_reason"),
    /**
     * Deliveries per second at most: a token bucket refilled at this rate that
     * holds a tenth of a second's worth (at least one); null: no limit.
     */
    rateLimit: integer("rate_limit"),
    /** The bucket: tokens left when last refilled (null: full), and when. */
    rateTokens: doublePrecision("rate_tokens"),
    rateRefilledAt: timestamp("rate_refilled_at", { withTimezone: true, mode: "date" }),
    /**
     * The endpoint's circuit breaker: connection-level failures in a row (refused,
     * DNS, TLS, timeouts; any HTTP answer resets it), how many times it opened in
     * a row, and until when its due dispatches wait without being attempted.
     * When that time passes one probe attempt is let through.
     */
    breakerFailures: integer("breaker_failures").notNull().default(0),
    breakerOpens: integer("breaker_opens").notNull().default(0),
    breakerOpenUntil: timestamp("breaker_open_until", { withTimezone: true, mode: "date" }),
    /** When `status` last changed; the auto-disable rule only judges a webhook active for its whole window. */
    statusChangedAt: timestamp("status_changed_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
    /** A listen session's webhook is deleted once this passes; its open stream keeps pushing it back. Null otherwise. */
    expiresAt: timestamp("expires_at", { withTimezone: true, mode: "date" }),
    /**
     * Held events older than this (seconds) when a paused or disabled webhook is
     * made active again are skipped, not delivered (recorded as `skipped`);
     * null: every held event is delivered.
     */
    heldEventMaxAge: integer("held_event_max_age"),
    /**
     * `resource`: events about the same resource (`data.object` and `data.id`) are delivered one at a time, in
     * sequence order; `none`: every event goes as soon as it can.
     */
    ordering: text("ordering").$type<WebhookOrdering>().notNull().default("none"),
    /**
     * With `resource` ordering, how long (seconds) an event that keeps failing holds back the later events of its
     * resource, counted from its first failure; after that, or once it is exhausted, the next one goes, naming it.
     */
    orderingHoldMax: integer("ordering_hold_max").notNull().default(3_600),
    /**
     * Soft delete: a deleted webhook hears nothing and is never sent to, but its
     * delivery log stays readable until retention prunes it, and then it goes.
     */
    deletedAt: timestamp("deleted_at", { withTimezone: true, mode: "date" }),
    deletedBy: text("deleted_by"),
    createdBy: text("created_by").notNull(),
    createdAt: createdAt(),
    updatedAt: timestamp("updated_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
  },
  (t) => [
    index("webhook_account_idx").on(t.account),
    index("webhook_deleted_idx")
      .on(t.deletedAt)
      .where(sql`${t.deletedAt} is not null`),
    index("webhook_events_idx").using("gin", t.events),
    index("webhook_expires_idx")
      .on(t.expiresAt)
      .where(sql`${t.expiresAt} is not null`),
    index("webhook_consent_due_idx")
      .on(t.consentNextAt)
      .where(sql`${t.consentState} = 'pending'`),
  ],
);
export type Webhook = typeof webhook.$inferSelect;

/**
 * An account's ed25519 signing keys (`account` null: global webhooks'), for `v1a` signatures. The key that signs is
 * the newest whose `signs_from` has come; every key is published (JWKS) from its creation until `published_until`
 * (null: while it may sign), so a receiver's cached key set has a new key before it signs anything.
 */
export const webhookSigningKey = pgTable(
  "webhook_signing_key",
  {
    /** The `kid`: `whk_…`, sent with every `v1a` signature (`webhook-key-id`). */
    id: prefixedId("whk"),
    account: text("account"),
    /** The raw 32-byte public key, base64url: a JWK's `x`. */
    publicKey: text("public_key").notNull(),
    /** The private key (PKCS#8, base64), sealed like a webhook secret. */
    privateKeySealed: text("private_key_sealed").notNull(),
    signsFrom: timestamp("signs_from", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
    publishedUntil: timestamp("published_until", { withTimezone: true, mode: "date" }),
    createdAt: createdAt(),
  },
  (t) => [index("webhook_signing_key_account_idx").on(t.account, t.signsFrom)],
);
export type WebhookSigningKey = typeof webhookSigningKey.$inferSelect;

/**
 * `skipped`: finished without delivery, on purpose — its webhook was deleted,
 * or it was held longer than the webhook's `held_event_max_age` while paused
 * or disabled.
 */
export const DISPATCH_STATUSES = ["pending", "success", "error", "exhausted", "skipped"] as const;
export type DispatchStatus = (typeof DISPATCH_STATUSES)[number];

/**
 * How a test event is sent, to exercise a receiver's rejection and dedupe
 * paths: `duplicate` POSTs it twice, `late` signs it with a timestamp beyond
 * the 300 s tolerance, `bad-signature` with a secret that is not the webhook's.
 */
export const TEST_MODES = ["duplicate", "late", "bad-signature"] as const;
/** The one event type a test mode may apply to (the check below says it in SQL). */
export const TEST_EVENT_TYPE = "webhook.test";
export type TestMode = (typeof TEST_MODES)[number];

/**
 * The delivery ledger: one row per event x webhook, and the commitment: it is
 * written once when the event is routed and rewritten by each attempt's
 * record. Every index is on a column those records never change, so a record
 * is a heap-only update. While the dispatch is open (`pending`, `error`) it
 * also has a row in `webhook_dispatch_open`, which is all the lane's claims read.
 */
export const webhookDispatch = pgTable(
  "webhook_dispatch",
  {
    id: prefixedId("wd"),
    eventId: text("event_id").notNull(),
    eventType: text("event_type").notNull(),
    webhookId: text("webhook_id")
      .notNull()
      .references(() => webhook.id, { onDelete: "cascade" }),
    account: text("account"),
    /** The exact bytes POSTed on every attempt. */
    payload: text("payload").notNull(),
    /**
     * The event's place in its webhook's stream: 1, 2, 3… in the order events are routed to it, with no gaps
     * (`webhook_sequence`), and in the body as `sequence`. Null for a `webhook.test` event.
     */
    sequence: bigint("sequence", { mode: "number" }),
    /** The resource the event is about (`data.id` of the payload): what the delivery log is searched by. */
    resourceId: text("resource_id").generatedAlwaysAs(sql`((payload)::jsonb -> 'data' ->> 'id')`),
    status: text("status").$type<DispatchStatus>().notNull().default("pending"),
    attemptCount: integer("attempt_count").notNull().default(0),
    /**
     * 1, plus one for every manual retry or recovery: each run starts again at
     * attempt 1 with the full schedule, and attempts are numbered within their run.
     */
    run: integer("run").notNull().default(1),
    /** The recovery job that last put this dispatch back to pending, if any. */
    recoveryId: text("recovery_id"),
    /** When the next attempt is planned (what the API shows); the open row's copy is what claims read. */
    nextAttemptAt: timestamp("next_attempt_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
    lastStatusCode: integer("last_status_code"),
    lastError: text("last_error"),
    /** A `webhook.test` event's test mode; null: sent as every event is. */
    testMode: text("test_mode").$type<TestMode>(),
    /** The event's catalogue attributes as published (what filters read, and a filter's preview); null: none. */
    attributes: jsonb("attributes").$type<Record<string, string | null>>(),
    /** With tracing on where it was published: the W3C `traceparent` of the event's publish span; its claims and attempts continue that trace. */
    traceparent: text("traceparent"),
    createdAt: createdAt(),
    updatedAt: timestamp("updated_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
    completedAt: timestamp("completed_at", { withTimezone: true, mode: "date" }),
  },
  (t) => [
    // A test mode can never change how a real event is signed or sent.
    check("webhook_dispatch_test_mode_check", sql`${t.testMode} is null or ${t.eventType} = 'webhook.test'`),
    uniqueIndex("webhook_dispatch_event_webhook_key").on(t.eventId, t.webhookId),
    // A webhook's stream in order (`GET /v3/events`); one dispatch per place in it.
    uniqueIndex("webhook_dispatch_webhook_sequence_key")
      .on(t.webhookId, t.sequence)
      .where(sql`${t.sequence} is not null`),
    // The delivery log, newest first; the auto-disable rule's window.
    index("webhook_dispatch_webhook_created_idx").on(t.webhookId, t.createdAt),
    // Searching the delivery log: by resource, and by type over a window (by event id: the unique key above).
    // Retention walks the type index too, oldest first.
    index("webhook_dispatch_resource_idx").on(t.resourceId),
    index("webhook_dispatch_type_created_idx").on(t.eventType, t.createdAt),
    index("webhook_dispatch_recovery_idx")
      .on(t.recoveryId)
      .where(sql`${t.recoveryId} is not null`),
    // No index reads status, next_attempt_at or completed_at: an attempt's record rewrites them heap-only.
  ],
);
export type WebhookDispatch = typeof webhookDispatch.$inferSelect;

/**
 * Each webhook's last `sequence` given out. Routing locks the rows of the webhooks it routes to, in id order, before
 * it looks for dispatches it already made, so two routings of the same webhook number one after the other and a
 * number is never given twice nor skipped. Nothing else locks these rows.
 */
export const webhookSequence = pgTable("webhook_sequence", {
  webhookId: text("webhook_id")
    .primaryKey()
    .references(() => webhook.id, { onDelete: "cascade" }),
  last: bigint("last", { mode: "number" }).notNull().default(0),
});

/**
 * The open dispatches: one narrow row per dispatch that is `pending` or
 * `error`, inserted with it and deleted when it finishes. It holds what the
 * lane's claims read and write, so leasing a dispatch never rewrites the
 * ledger row: when it is next due (the ledger's `next_attempt_at`, kept
 * equal by every statement that sets it), and the lease a worker holds on it
 * while its attempt runs. No foreign key (a check per insert): a dispatch's
 * deletion takes its open row with it (trigger `webhook_dispatch_gone`).
 */
export const webhookDispatchOpen = pgTable(
  "webhook_dispatch_open",
  {
    dispatchId: text("dispatch_id").primaryKey(),
    webhookId: text("webhook_id").notNull(),
    nextAttemptAt: timestamp("next_attempt_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
    /** The lease: until when `locked_by` holds it. Not indexed, so a lease and its renewals are heap-only updates. */
    lockedUntil: timestamp("locked_until", { withTimezone: true, mode: "date" }),
    lockedBy: text("locked_by"),
    /**
     * Push transports: a deliver message is expected to carry this dispatch by
     * then, so the sweeper leaves it alone. Unused by the postgres transport.
     */
    queuedUntil: timestamp("queued_until", { withTimezone: true, mode: "date" }),
    /**
     * For a webhook with `resource` ordering (null otherwise): the resource (`<object>:<id>`), the event's
     * `sequence`, and when its first attempt failed. An open row with an earlier sequence of the same key holds it
     * back until it finishes, or until it has failed for the webhook's `ordering_hold_max`.
     */
    orderKey: text("order_key"),
    sequence: bigint("sequence", { mode: "number" }),
    failingSince: timestamp("failing_since", { withTimezone: true, mode: "date" }),
  },
  (t) => [
    // The claim's walk: webhooks in id order, each one's earliest first.
    index("webhook_dispatch_open_webhook_due_idx").on(t.webhookId, t.nextAttemptAt),
    // What holds an ordered row back: the open rows of its webhook and resource, by sequence.
    index("webhook_dispatch_open_order_idx")
      .on(t.webhookId, t.orderKey, t.sequence)
      .where(sql`${t.orderKey} is not null`),
  ],
);
export type WebhookDispatchOpen = typeof webhookDispatchOpen.$inferSelect;

export const ATTEMPT_OUTCOMES = ["success", "retry", "failed", "blocked"] as const;
export type AttemptOutcome = (typeof ATTEMPT_OUTCOMES)[number];

/** One row per POST: what was sent, what came back, how long it took. Appended, never changed. */
export const webhookAttempt = pgTable(
  "webhook_attempt",
  {
    /**
     * The dispatch it belongs to. No foreign key: its check per row locked the dispatch once more for every
     * attempt recorded. The record statement writes an attempt only for a dispatch it updated or locked, and
     * deleting a dispatch deletes its attempts (trigger `webhook_dispatch_gone`).
     */
    dispatchId: text("dispatch_id").notNull(),
    run: integer("run").notNull().default(1),
    attempt: integer("attempt").notNull(),
    startedAt: timestamp("started_at", { withTimezone: true, mode: "date" }).notNull(),
    durationMs: integer("duration_ms").notNull(),
    outcome: text("outcome").$type<AttemptOutcome>().notNull(),
    statusCode: integer("status_code"),
    errorClass: text("error_class"),
    errorMessage: text("error_message"),
    responseExcerpt: text("response_excerpt"),
    signature: jsonb("signature").$type<SignatureManifest>().notNull(),
    /** The lane worker that sent it. */
    worker: text("worker").notNull(),
    nextAttemptAt: timestamp("next_attempt_at", { withTimezone: true, mode: "date" }),
  },
  (t) => [
    primaryKey({ columns: [t.dispatchId, t.run, t.attempt] }),
    // Retention finds the old ones by start: appended in time order, so a block range index is all it needs, and
    // costs an attempt's record next to nothing.
    index("webhook_attempt_started_idx").using("brin", t.startedAt).with({ autosummarize: true }),
  ],
);
export type WebhookAttempt = typeof webhookAttempt.$inferSelect;

/**
 * What was signed, never with what: the timestamp, the scheme and how many
 * signatures; for a test event sent in a test mode, that mode (`duplicate`:
 * POSTed twice; `late`: `timestamp` is beyond the tolerance; `bad-signature`:
 * signed with a throwaway secret).
 */
export interface SignatureManifest {
  timestamp: number;
  scheme: SignatureScheme;
  signatures: number;
  mode?: TestMode;
}

/**
 * The postgres transport's `webhook-out-route` topic. Deliveries need no table
 * of their own: with this transport the dispatch row is the deliver message.
 * A job's shard is its event's account hashed into 16 (an event without one
 * has the shard of ''): a lane step routes from shards no other step holds,
 * so steps at once number different webhooks (hooklane_route_and_claim).
 */
export const webhookRouteJob = pgTable(
  "webhook_route_job",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    message: jsonb("message").notNull(),
    runAt: timestamp("run_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
    attempts: integer("attempts").notNull().default(0),
    lockedUntil: timestamp("locked_until", { withTimezone: true, mode: "date" }),
    lockedBy: text("locked_by"),
    lastError: text("last_error"),
    createdAt: createdAt(),
  },
  (t) => [
    index("webhook_route_job_run_at_idx").on(t.runAt),
    index("webhook_route_job_shard_idx").on(
      sql`(hashtext(coalesce(${t.message} ->> 'account', '')) & 15)`,
      t.runAt,
      t.id,
    ),
  ],
);

/**
 * Lane workers alive: each renews its row (and its leases) every few
 * seconds, so operators see who runs and a dead worker's leases run out soon.
 */
export const webhookWorker = pgTable("webhook_worker", {
  id: text("id").primaryKey(),
  startedAt: timestamp("started_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
  heartbeatAt: timestamp("heartbeat_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
  lastClaimAt: timestamp("last_claim_at", { withTimezone: true, mode: "date" }),
  inFlight: integer("in_flight").notNull().default(0),
});

/**
 * The in-flight book: what each lane worker (a Vercel invocation is one) has
 * in flight, per webhook, origin and owning account. A worker's claim writes
 * its own row, from what the worker says it has running and what the claim
 * took; a claim reads the other workers' rows for the webhook, origin and
 * account it takes from, under their locks. Between its claims a worker's
 * row can only overstate. Its lease keeper keeps `until` ahead, and a worker
 * that dies stops counting when its leases run out.
 */
export const webhookLaneInFlight = pgTable("webhook_lane_in_flight", {
  worker: text("worker").primaryKey(),
  /** Counted until then: the worker's leases run out by then too unless it renews them. */
  until: timestamp("until", { withTimezone: true, mode: "date" }).notNull(),
  /** Webhook id → deliveries in flight. */
  byWebhook: jsonb("by_webhook").$type<Record<string, number>>().notNull(),
  /** Origin → deliveries in flight. */
  byOrigin: jsonb("by_origin").$type<Record<string, number>>().notNull(),
  /** Owning account (`""` for global webhooks) → deliveries in flight. */
  byAccount: jsonb("by_account").$type<Record<string, number>>().notNull(),
});

/**
 * Each webhook's delivery health now, kept by the statement that records
 * attempts: failed attempts since the last success, and the last answer.
 * Read by `GET /v3/webhooks/:id/health` without scanning the attempt log.
 */
export const webhookHealth = pgTable("webhook_health", {
  webhookId: text("webhook_id")
    .primaryKey()
    .references(() => webhook.id, { onDelete: "cascade" }),
  failuresInARow: integer("failures_in_a_row").notNull().default(0),
  lastAttemptAt: timestamp("last_attempt_at", { withTimezone: true, mode: "date" }).notNull(),
  lastSuccessAt: timestamp("last_success_at", { withTimezone: true, mode: "date" }),
  lastFailureAt: timestamp("last_failure_at", { withTimezone: true, mode: "date" }),
  /** `<error class>: <message>` of the last failed attempt (kept after a success, with its time). */
  lastError: text("last_error"),
  lastStatusCode: integer("last_status_code"),
});
export type WebhookHealth = typeof webhookHealth.$inferSelect;

/**
 * Attempts per webhook, hour (UTC, by start time) and duration bucket (a
 * geometric histogram, `LATENCY_BUCKETS`), and how many of them succeeded: a
 * day's success rate and percentiles are read from a few hundred rows. Kept
 * by the statement that records attempts, one small upsert per bucket a
 * batch touches; the sweeper drops rows past `HEALTH_RETENTION`.
 */
export const webhookHealthHour = pgTable(
  "webhook_health_hour",
  {
    webhookId: text("webhook_id")
      .notNull()
      .references(() => webhook.id, { onDelete: "cascade" }),
    hour: timestamp("hour", { withTimezone: true, mode: "date" }).notNull(),
    bucket: smallint("bucket").notNull(),
    attempts: integer("attempts").notNull(),
    succeeded: integer("succeeded").notNull(),
  },
  (t) => [primaryKey({ columns: [t.webhookId, t.hour, t.bucket] }), index("webhook_health_hour_hour_idx").on(t.hour)],
);

/**
 * Attempts recorded per minute, lane-wide: the lane's recent throughput. Kept like `webhook_health_hour`, in one
 * of sixteen rows a minute picked by the recording worker's id, so that workers recording at once do not queue on
 * one row; readers add them up.
 */
export const webhookLaneMinute = pgTable(
  "webhook_lane_minute",
  {
    minute: timestamp("minute", { withTimezone: true, mode: "date" }).notNull(),
    shard: smallint("shard").notNull().default(0),
    attempts: integer("attempts").notNull(),
    succeeded: integer("succeeded").notNull(),
  },
  (t) => [primaryKey({ columns: [t.minute, t.shard] })],
);

/** Messages that failed their schema: kept for inspection, never retried. */
export const webhookPoisonMessage = pgTable("webhook_poison_message", {
  id: bigserial("id", { mode: "number" }).primaryKey(),
  topic: text("topic").notNull(),
  message: jsonb("message"),
  error: text("error").notNull(),
  createdAt: createdAt(),
});

/**
 * `dispatch.exhausted`: one per dispatch that failed for good, written with
 * its last attempt; never mailed alone, but folded into a
 * `dispatch.exhausted.digest` per webhook and window. `webhook.disabled` is
 * mailed at once.
 */
export const NOTIFICATION_KINDS = ["dispatch.exhausted", "dispatch.exhausted.digest", "webhook.disabled"] as const;
export type NotificationKind = (typeof NOTIFICATION_KINDS)[number];

/**
 * `pending`: to be mailed by the sweeper (retried until `next_mail_at`);
 * `sent`; `none`: nobody to mail (no SMTP, no address); `failed`: gave up
 * after `NOTIFY_MAIL_ATTEMPTS`; `digest`: an exhausted dispatch, told in its digest.
 */
export const MAIL_STATUSES = ["pending", "sent", "none", "failed", "digest"] as const;
export type MailStatus = (typeof MAIL_STATUSES)[number];

/**
 * What the owner of a webhook is told: exhausted deliveries (in digests),
 * disabled webhooks. Written in the transaction that decides it (the lane's
 * attempt record, the disable); mailed by the sweeper with retries, so a
 * notification is never lost with the process that wrote it.
 */
export const webhookNotification = pgTable(
  "webhook_notification",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    webhookId: text("webhook_id")
      .notNull()
      .references(() => webhook.id, { onDelete: "cascade" }),
    account: text("account"),
    kind: text("kind").$type<NotificationKind>().notNull(),
    detail: jsonb("detail").notNull(),
    mailStatus: text("mail_status").$type<MailStatus>().notNull().default("pending"),
    mailAttempts: integer("mail_attempts").notNull().default(0),
    nextMailAt: timestamp("next_mail_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
    mailedAt: timestamp("mailed_at", { withTimezone: true, mode: "date" }),
    mailError: text("mail_error"),
    /** An exhausted dispatch's digest, once folded into one. */
    digestId: bigint("digest_id", { mode: "number" }),
    createdAt: createdAt(),
  },
  (t) => [
    index("webhook_notification_webhook_idx").on(t.webhookId),
    index("webhook_notification_account_idx").on(t.account, t.id),
    // What the sweeper mails next.
    index("webhook_notification_mail_due_idx")
      .on(t.nextMailAt)
      .where(sql`${t.mailStatus} = 'pending'`),
    // Exhausted dispatches waiting for their digest, per webhook.
    index("webhook_notification_undigested_idx")
      .on(t.webhookId, t.createdAt)
      .where(sql`${t.kind} = 'dispatch.exhausted' and ${t.digestId} is null`),
  ],
);
export type WebhookNotification = typeof webhookNotification.$inferSelect;

export const RECOVERY_STATUSES = ["pending", "running", "completed"] as const;
export type RecoveryStatus = (typeof RECOVERY_STATUSES)[number];

/**
 * A bulk recovery: puts a webhook's failed and exhausted dispatches created in
 * [since, until) back to pending, in batches, off the request path. The
 * sweeper claims it with a lease; `cursor_*` is where the next batch starts.
 */
export const RECOVERY_KINDS = ["recover", "resend"] as const;
export type RecoveryKind = (typeof RECOVERY_KINDS)[number];

export const webhookRecovery = pgTable(
  "webhook_recovery",
  {
    id: prefixedId("whr"),
    /**
     * `recover`: one webhook's failed and exhausted dispatches. `resend`: every
     * dispatch (delivered ones too) of `event_type` across `account`'s webhooks.
     */
    kind: text("kind").$type<RecoveryKind>().notNull().default("recover"),
    /** The webhook a `recover` job works on; null for a `resend`. */
    webhookId: text("webhook_id").references(() => webhook.id, { onDelete: "cascade" }),
    /** The account whose webhooks a `resend` job covers (null: the global webhooks). */
    account: text("account"),
    /** A `resend` job's event type. */
    eventType: text("event_type"),
    since: timestamp("since", { withTimezone: true, mode: "date" }).notNull(),
    until: timestamp("until", { withTimezone: true, mode: "date" }).notNull(),
    status: text("status").$type<RecoveryStatus>().notNull().default("pending"),
    /** Dispatches in the window when the job started; null until then. */
    total: integer("total"),
    requeued: integer("requeued").notNull().default(0),
    cursorCreatedAt: timestamp("cursor_created_at", { withTimezone: true, mode: "date" }),
    cursorId: text("cursor_id"),
    lockedUntil: timestamp("locked_until", { withTimezone: true, mode: "date" }),
    lockedBy: text("locked_by"),
    /** When a sweeper last advanced it: recoveries take turns, the owner whose turn is oldest first. */
    turnAt: timestamp("turn_at", { withTimezone: true, mode: "date" }),
    createdBy: text("created_by").notNull(),
    createdAt: createdAt(),
    startedAt: timestamp("started_at", { withTimezone: true, mode: "date" }),
    completedAt: timestamp("completed_at", { withTimezone: true, mode: "date" }),
  },
  (t) => [
    check(
      "webhook_recovery_kind_check",
      sql`(${t.kind} = 'recover' and ${t.webhookId} is not null) or (${t.kind} = 'resend' and ${t.eventType} is not null)`,
    ),
    index("webhook_recovery_webhook_idx").on(t.webhookId),
    index("webhook_recovery_open_idx")
      .on(t.createdAt)
      .where(sql`${t.status} <> 'completed'`),
  ],
);
export type WebhookRecovery = typeof webhookRecovery.$inferSelect;

/**
 * The first answer to a mutating request sent with an `Idempotency-Key`,
 * per account and key: a retry with the same key and request, by the same
 * caller, is answered with it instead of running again. Written in the
 * mutation's own transaction, so it exists if and only if the mutation
 * committed. Rows past `expires_at` are ignored and pruned by the sweeper.
 */
export const idempotencyKey = pgTable(
  "idempotency_key",
  {
    account: text("account").notNull(),
    key: text("key").notNull(),
    /** SHA-256 of the method, path and body: the same key with another request is refused. */
    fingerprint: text("fingerprint").notNull(),
    /**
     * SHA-256 of the caller (subject, account, role): the answer is replayed to
     * that caller only. Null on rows stored before callers were bound, which
     * are replayed to nobody and expire within 24 h.
     */
    principal: text("principal"),
    status: integer("status").notNull(),
    contentType: text("content_type"),
    /** The answer's body as sent; sealed (JWE) when it shows a secret. */
    body: text("body").notNull(),
    sealed: boolean("sealed").notNull().default(false),
    createdAt: createdAt(),
    expiresAt: timestamp("expires_at", { withTimezone: true, mode: "date" }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.account, t.key] }), index("idempotency_key_expires_idx").on(t.expiresAt)],
);
export type IdempotencyKey = typeof idempotencyKey.$inferSelect;

/**
 * Control-plane actions, who took them and on what: every change to a
 * webhook, retry, recovery or resend, and everything a `support` token does.
 * `account` is the owner of the target (null: a global webhook), and the row
 * is readable by that account and by support.
 */
export const auditLog = pgTable(
  "audit_log",
  {
    id: prefixedId("aud"),
    account: text("account"),
    actorSub: text("actor_sub").notNull(),
    actorAccount: text("actor_account").notNull(),
    actorRole: text("actor_role"),
    action: text("action").notNull(),
    target: text("target").notNull(),
    detail: jsonb("detail").$type<Record<string, unknown>>().notNull().default({}),
    createdAt: createdAt(),
  },
  (t) => [
    index("audit_log_account_created_idx").on(t.account, t.createdAt),
    index("audit_log_target_idx").on(t.target),
  ],
);
export type AuditLogEntry = typeof auditLog.$inferSelect;

// ---------------------------------------------------------------------------
// Sessions: the console's sign-ins and the portal's URLs, revocable.
// ---------------------------------------------------------------------------

/**
 * A console sign-in. The browser holds a random id in its cookie; only the
 * id's SHA-256 is kept here, with the claims of the token that signed in
 * (never the token). A row past `expires_at` or with `revoked_at` set signs
 * nobody in; the sweeper prunes expired rows.
 */
export const consoleSession = pgTable(
  "console_session",
  {
    /** SHA-256 of the cookie's id, base64url. */
    idHash: text("id_hash").primaryKey(),
    subject: text("subject").notNull(),
    account: text("account").notNull(),
    /** The token's role claim: `admin`, `support` or null. */
    role: text("role"),
    createdAt: createdAt(),
    expiresAt: timestamp("expires_at", { withTimezone: true, mode: "date" }).notNull(),
    revokedAt: timestamp("revoked_at", { withTimezone: true, mode: "date" }),
  },
  (t) => [index("console_session_expires_idx").on(t.expiresAt)],
);
export type ConsoleSession = typeof consoleSession.$inferSelect;

/**
 * A portal session (`POST /v3/portal-sessions`). Its URL carries the sealed
 * session; this row is what lets the account list and revoke it, and the
 * portal refuses a URL without a live row. The sweeper prunes expired rows.
 */
export const portalSession = pgTable(
  "portal_session",
  {
    /** `ps_…`, the sealed token's `jti`. */
    id: text("id").primaryKey(),
    account: text("account").notNull(),
    frameAncestors: jsonb("frame_ancestors").$type<string[]>().notNull(),
    createdAt: createdAt(),
    expiresAt: timestamp("expires_at", { withTimezone: true, mode: "date" }).notNull(),
    revokedAt: timestamp("revoked_at", { withTimezone: true, mode: "date" }),
  },
  (t) => [
    index("portal_session_account_created_idx").on(t.account, t.createdAt),
    index("portal_session_expires_idx").on(t.expiresAt),
  ],
);
export type PortalSessionRow = typeof portalSession.$inferSelect;

/**
 * A signing secret on its way to the console page that shows it, once. The
 * form that created the webhook or rotated its secret stores the secret here
 * (sealed) and redirects to a page named by a random token, so reloading the
 * page cannot run the action again; that page takes the row (only the
 * token's SHA-256 is kept), and the secret is not shown a second time. Rows
 * last ten minutes; the sweeper prunes what nobody took.
 */
export const secretHandover = pgTable(
  "secret_handover",
  {
    /** SHA-256 of the page's token, base64url. */
    idHash: text("id_hash").primaryKey(),
    webhookId: text("webhook_id").notNull(),
    secretSealed: text("secret_sealed").notNull(),
    /** Shown after a rotation (the previous secret keeps signing for its grace) rather than a create. */
    rotated: boolean("rotated").notNull(),
    createdAt: createdAt(),
    expiresAt: timestamp("expires_at", { withTimezone: true, mode: "date" }).notNull(),
  },
  (t) => [index("secret_handover_expires_idx").on(t.expiresAt)],
);
