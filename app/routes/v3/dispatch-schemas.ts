import { z } from "zod";
import { iso, isoOrNull, timestamp } from "../../../lib/api/timestamps.ts";
import {
  ATTEMPT_OUTCOMES,
  DISPATCH_STATUSES,
  RECOVERY_STATUSES,
  SIGNATURE_SCHEMES,
  TEST_MODES,
  type WebhookAttempt,
  type WebhookDispatch,
  type WebhookRecovery,
} from "../../../lib/db/schema.ts";
import { attemptRequestHeaders } from "../../../lib/webhook/outbound/webhook-request-headers.ts";
import { idParams } from "./resource-fields.ts";

export const dispatchIdParams = idParams("The dispatch's id (`wd_…`).");

const EVENT_BODY_EXAMPLE = {
  id: "evt_W_JxWQ3xHey2WjMbI10U",
  object: "event",
  type: "payment-debt.created",
  created: "2026-12-01T09:30:00.000Z",
  livemode: true,
  sequence: 42,
  data: {
    object: "payment-debt",
    id: "pd_2f97c4e1a8b34d6e9f0a1b2c3d4e5f6a",
    account: "acc_4b1f9e2c7d8a4e6f9b0c1d2e3f4a5b6c",
  },
};

const DISPATCH_EXAMPLE = {
  id: "wd_0a1b2c3d4e5f4a6b8c9d0e1f2a3b4c5d",
  object: "webhook-dispatch",
  webhook: "wh_3e8a1f0c9b2d4e7f8a6c5b4d3e2f1a0b",
  event: { id: EVENT_BODY_EXAMPLE.id, type: EVENT_BODY_EXAMPLE.type },
  sequence: EVENT_BODY_EXAMPLE.sequence,
  status: "error",
  run: 1,
  attemptCount: 1,
  lastStatusCode: 503,
  lastError: "HTTP 503",
  nextAttempt: "2026-12-01T09:30:05.000Z",
  created: "2026-12-01T09:30:00.000Z",
  updated: "2026-12-01T09:30:00.120Z",
  completed: null,
};

/** The body subscribers receive (thin: identifiers only). */
export const eventBodySchema = z
  .strictObject({
    id: z.string().describe("`evt_…`"),
    object: z
      .literal("event")
      .optional()
      .describe("Always `event` (absent only from bodies routed before a deployment had it)."),
    type: z.string().describe("The event type, e.g. `payment-debt.created`."),
    created: timestamp,
    livemode: z
      .boolean()
      .describe(
        "The deployment's `WEBHOOK_LIVEMODE` (true by default): tells a live environment's events from a test one's.",
      ),
    sequence: z
      .number()
      .int()
      .positive()
      .optional()
      .describe(
        "The event's place in this webhook's stream: 1, 2, 3… in the order events were routed to the webhook, never skipped, the same on every attempt. A jump means events were missed: fetch them from `GET /v3/events?webhook=…&after=…`. Absent from `webhook.test` events.",
      ),
    ordering: z
      .strictObject({
        skipped: z
          .array(z.string())
          .describe("The earlier events of this resource it went ahead of, undelivered (`evt_…`), oldest first."),
      })
      .optional()
      .describe(
        "Only with `resource` ordering, on an event sent after earlier events of its resource that were not delivered (exhausted, or failing for longer than the webhook's `orderingHoldMax`): which. The same on every attempt.",
      ),
    data: z
      .strictObject({
        object: z.string().describe("The resource's kind, e.g. `payment-debt`."),
        id: z.string(),
        account: z
          .string()
          .nullable()
          .describe("The account that owned the resource when the event happened; null when no account owns it."),
      })
      .describe("What the event is about, by identifiers only: read the resource back by `data.id` for its state."),
  })
  .meta({ id: "EventBody", examples: [EVENT_BODY_EXAMPLE] });

export const dispatchSchema = z
  .strictObject({
    id: z.string().describe("`wd_…`"),
    object: z.literal("webhook-dispatch"),
    webhook: z.string().describe("The webhook it is delivered to (`wh_…`)."),
    event: z
      .strictObject({ id: z.string(), type: z.string().describe("The event type, e.g. `payment-debt.created`.") })
      .describe("The event it delivers: the body's `id` and `type`."),
    sequence: z
      .number()
      .int()
      .nullable()
      .describe("The body's `sequence`: the event's place in the webhook's stream; null for a `webhook.test` event."),
    status: z
      .enum(DISPATCH_STATUSES)
      .describe(
        "`pending`: waiting for its first attempt (or the first of a new run); `error`: failed, waiting for a retry; `success`: delivered; `exhausted`: failed for good, its run's retries spent; `skipped`: finished without delivery on purpose (its webhook was deleted, or it was held longer than `heldEventMaxAge`).",
      ),
    run: z.number().int().describe("1, plus one per manual retry or recovery."),
    attemptCount: z.number().int().describe("Attempts made in the current run."),
    lastStatusCode: z
      .number()
      .int()
      .nullable()
      .describe("The HTTP status the latest attempt got; null when it got no HTTP answer, or before any attempt."),
    lastError: z
      .string()
      .nullable()
      .describe(
        "`<error class>: <message>` of the latest attempt, or why the dispatch was skipped; null when the latest attempt succeeded, or before any attempt.",
      ),
    nextAttempt: timestamp.nullable().describe("When the next attempt is due; null once finished."),
    created: timestamp,
    updated: timestamp,
    completed: timestamp
      .nullable()
      .describe("When it finished (`success`, `exhausted` or `skipped`); null while it is `pending` or `error`."),
  })
  .meta({ id: "WebhookDispatch", examples: [DISPATCH_EXAMPLE] });

const ATTEMPT_EXAMPLE = {
  run: 1,
  attempt: 1,
  started: "2026-12-01T09:30:00.010Z",
  durationMs: 95,
  outcome: "retry",
  statusCode: 503,
  errorClass: "http_status",
  errorMessage: "HTTP 503",
  responseExcerpt: "Service Unavailable",
  signature: { timestamp: 1796117400, scheme: "hooklane-v1", signatures: 1 },
  requestHeaders: {
    "content-type": "application/json",
    "user-agent": "Hooklane-Webhooks/0.1.0",
    "Hooklane-Event-Id": "evt_W_JxWQ3xHey2WjMbI10U",
    "Hooklane-Attempt": "1",
    "Hooklane-Signature": "t=1796117400,v1=[redacted]",
  },
  nextAttempt: "2026-12-01T09:30:05.000Z",
};

export const attemptSchema = z
  .strictObject({
    run: z.number().int().describe("The dispatch's run it belongs to: 1, plus one per manual retry or recovery."),
    attempt: z.number().int().describe("Its number within its run, from 1."),
    started: timestamp.describe("When it started."),
    durationMs: z.number().int().describe("How long it took, in ms, until the answer or the failure."),
    outcome: z
      .enum(ATTEMPT_OUTCOMES)
      .describe(
        "`success`: a 2xx answer; `retry`: failed, another attempt follows (`nextAttempt`); `failed`: failed with no retry left, so the dispatch is exhausted; `blocked`: not sent, because the URL or its address is refused or outbound calls are switched off (retried like any failure).",
      ),
    statusCode: z.number().int().nullable().describe("The HTTP status of the answer; null when no answer came."),
    errorClass: z
      .string()
      .nullable()
      .describe(
        "Why it failed, as data: `http_status`, `redirect`, `timeout`, `connection_refused`, `connection_reset`, `dns`, `tls`, `response_too_large`, `network`, `blocked` or `internal` (the attempt could not be made); null on success.",
      ),
    errorMessage: z
      .string()
      .nullable()
      .describe("What went wrong, for people (500 characters at most); null on success."),
    responseExcerpt: z.string().nullable().describe("The first bytes of the subscriber's answer."),
    signature: z
      .strictObject({
        timestamp: z
          .number()
          .int()
          .describe(
            "The timestamp signed, in Unix seconds (`t=`, or `webhook-timestamp`); 0 if the attempt could not be made.",
          ),
        scheme: z.enum(SIGNATURE_SCHEMES).describe("The scheme it was signed with: the webhook's `scheme` then."),
        signatures: z
          .number()
          .int()
          .describe(
            "How many signatures it carried: 2 during a secret rotation (current and previous secret), else 1; 0 if the attempt could not be made.",
          ),
        mode: z.enum(TEST_MODES).optional().describe("A test event's test mode, when it was sent in one."),
      })
      .describe("What was signed, never with what."),
    requestHeaders: z
      .record(z.string(), z.string())
      .describe(
        "The delivery's own headers the attempt was sent with (the webhook's `headers` are not kept per attempt); every signature value reads `[redacted]`.",
      ),
    nextAttempt: timestamp
      .nullable()
      .describe("When the next attempt was due, as set when this one was recorded; null when no retry was scheduled."),
  })
  .meta({ id: "WebhookAttempt", examples: [ATTEMPT_EXAMPLE] });

export const dispatchDetailSchema = dispatchSchema
  .extend({
    payload: eventBodySchema.describe(
      "The body POSTed on every attempt, as JSON (the bytes sent are its compact form).",
    ),
    attempts: z.array(attemptSchema).describe("Every attempt of every run, oldest first."),
    heldBehind: z
      .string()
      .nullable()
      .describe(
        "With `resource` ordering: the earlier event of the same resource (`evt_…`) this one waits for, not delivered yet and not failing for longer than the webhook's `orderingHoldMax`; null when it waits for nothing.",
      ),
  })
  .meta({
    id: "WebhookDispatchDetail",
    examples: [{ ...DISPATCH_EXAMPLE, payload: EVENT_BODY_EXAMPLE, attempts: [ATTEMPT_EXAMPLE], heldBehind: null }],
  });

/** What a recovery's or resend's `status` means. */
const RECOVERY_STATUS =
  "`pending`: waiting for the sweeper; `running`: being worked through in batches; `completed`: the whole window has been gone through (what it started over may still be delivering: see `delivered` and `failed`).";

export const recoverySchema = z
  .strictObject({
    id: z.string().describe("`whr_…`"),
    object: z.literal("webhook-recovery"),
    webhook: z.string().describe("The webhook whose dispatches it recovers (`wh_…`)."),
    status: z.enum(RECOVERY_STATUSES).describe(RECOVERY_STATUS),
    since: timestamp.describe("Start of the window: dispatches created at or after this time."),
    until: timestamp.describe("End of the window: dispatches created before this time."),
    total: z.number().int().nullable().describe("Failed and exhausted dispatches in the window; null until started."),
    requeued: z.number().int().describe("Put back to pending so far."),
    delivered: z.number().int().describe("Of those, delivered since."),
    failed: z.number().int().describe("Of those, exhausted again."),
    created: timestamp,
    started: timestamp.nullable().describe("When a sweeper first took it up; null while `pending`."),
    completed: timestamp.nullable().describe("When its last batch was done; null until `completed`."),
  })
  .meta({
    id: "WebhookRecovery",
    examples: [
      {
        id: "whr_6e5d4c3b2a1f4e0d9c8b7a6f5e4d3c2b",
        object: "webhook-recovery",
        webhook: "wh_3e8a1f0c9b2d4e7f8a6c5b4d3e2f1a0b",
        status: "running",
        since: "2026-11-30T09:30:00.000Z",
        until: "2026-12-01T09:30:00.000Z",
        total: 1200,
        requeued: 400,
        delivered: 380,
        failed: 2,
        created: "2026-12-01T09:30:00.000Z",
        started: "2026-12-01T09:30:00.050Z",
        completed: null,
      },
    ],
  });

export function presentDispatch(row: WebhookDispatch): z.output<typeof dispatchSchema> {
  const open = row.status === "pending" || row.status === "error";
  return {
    id: row.id,
    object: "webhook-dispatch",
    webhook: row.webhookId,
    event: { id: row.eventId, type: row.eventType },
    sequence: row.sequence,
    status: row.status,
    run: row.run,
    attemptCount: row.attemptCount,
    lastStatusCode: row.lastStatusCode,
    lastError: row.lastError,
    nextAttempt: open ? iso(row.nextAttemptAt) : null,
    created: iso(row.createdAt),
    updated: iso(row.updatedAt),
    completed: isoOrNull(row.completedAt),
  };
}

/** A dispatch with its body (parsed: nested JSON is JSON) and every attempt. */
export function presentDispatchDetail(
  row: WebhookDispatch,
  attempts: readonly WebhookAttempt[],
  brand: string,
  heldBehind: string | null,
): z.output<typeof dispatchDetailSchema> {
  return {
    ...presentDispatch(row),
    payload: JSON.parse(row.payload) as z.output<typeof eventBodySchema>,
    attempts: attempts.map((attempt) => presentAttempt(attempt, row.eventId, brand)),
    heldBehind,
  };
}

function presentAttempt(row: WebhookAttempt, eventId: string, brand: string): z.output<typeof attemptSchema> {
  return {
    run: row.run,
    attempt: row.attempt,
    started: iso(row.startedAt),
    durationMs: row.durationMs,
    outcome: row.outcome,
    statusCode: row.statusCode,
    errorClass: row.errorClass,
    errorMessage: row.errorMessage,
    responseExcerpt: row.responseExcerpt,
    signature: row.signature,
    requestHeaders: attemptRequestHeaders({ brand, eventId, attempt: row.attempt, manifest: row.signature }),
    nextAttempt: isoOrNull(row.nextAttemptAt),
  };
}

export function presentRecovery(
  row: WebhookRecovery,
  outcome: { delivered: number; failed: number },
): z.output<typeof recoverySchema> {
  return {
    id: row.id,
    object: "webhook-recovery",
    webhook: row.webhookId!,
    status: row.status,
    since: iso(row.since),
    until: iso(row.until),
    total: row.total,
    requeued: row.requeued,
    delivered: outcome.delivered,
    failed: outcome.failed,
    created: iso(row.createdAt),
    started: isoOrNull(row.startedAt),
    completed: isoOrNull(row.completedAt),
  };
}

export const resendSchema = z
  .strictObject({
    id: z.string().describe("`whr_…`"),
    object: z.literal("webhook-resend"),
    eventType: z.string().describe("The event type it sends again, e.g. `payment-debt.created`."),
    account: z.string().nullable().describe("The account whose webhooks it covers; null: the global webhooks."),
    status: z.enum(RECOVERY_STATUSES).describe(RECOVERY_STATUS),
    since: timestamp.describe("Start of the window: dispatches created at or after this time."),
    until: timestamp.describe("End of the window: dispatches created before this time."),
    total: z
      .number()
      .int()
      .nullable()
      .describe("Finished dispatches of the type in the window, delivered ones included; null until started."),
    requeued: z.number().int().describe("Started over so far (a new run each, due now)."),
    delivered: z.number().int().describe("Of those, delivered since."),
    failed: z.number().int().describe("Of those, exhausted since."),
    created: timestamp,
    started: timestamp.nullable().describe("When a sweeper first took it up; null while `pending`."),
    completed: timestamp.nullable().describe("When its last batch was done; null until `completed`."),
  })
  .meta({
    id: "WebhookResend",
    examples: [
      {
        id: "whr_0f1e2d3c4b5a49687766554433221100",
        object: "webhook-resend",
        eventType: "payment-debt.created",
        account: "acc_4b1f9e2c7d8a4e6f9b0c1d2e3f4a5b6c",
        status: "completed",
        since: "2026-11-30T09:30:00.000Z",
        until: "2026-12-01T09:30:00.000Z",
        total: 120,
        requeued: 120,
        delivered: 118,
        failed: 0,
        created: "2026-12-01T09:30:00.000Z",
        started: "2026-12-01T09:30:00.050Z",
        completed: "2026-12-01T09:30:01.200Z",
      },
    ],
  });

export function presentResend(
  row: WebhookRecovery,
  outcome: { delivered: number; failed: number },
): z.output<typeof resendSchema> {
  return {
    id: row.id,
    object: "webhook-resend",
    eventType: row.eventType!,
    account: row.account,
    status: row.status,
    since: iso(row.since),
    until: iso(row.until),
    total: row.total,
    requeued: row.requeued,
    delivered: outcome.delivered,
    failed: outcome.failed,
    created: iso(row.createdAt),
    started: isoOrNull(row.startedAt),
    completed: isoOrNull(row.completedAt),
  };
}
