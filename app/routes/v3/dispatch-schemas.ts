import { z } from "zod";
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
import { isoOrNull, timestamp } from "./webhook-schemas.ts";

export const dispatchIdParams = z.object({ id: z.string().max(100).describe("The dispatch's id (`wd_…`).") });

export const dispatchSchema = z
  .object({
    id: z.string(),
    object: z.literal("webhook_dispatch"),
    webhook: z.string(),
    event: z.object({ id: z.string(), type: z.string() }),
    status: z.enum(DISPATCH_STATUSES),
    run: z.number().int().describe("1, plus one per manual retry or recovery."),
    attempts: z.number().int().describe("Attempts made in the current run."),
    lastStatusCode: z.number().int().nullable(),
    lastError: z.string().nullable(),
    nextAttempt: timestamp.nullable().describe("When the next attempt is due; null once finished."),
    created: timestamp,
    updated: timestamp,
    completed: timestamp.nullable(),
  })
  .meta({ id: "WebhookDispatch" });

export const attemptSchema = z
  .object({
    run: z.number().int(),
    attempt: z.number().int(),
    started: timestamp,
    durationMs: z.number().int(),
    outcome: z.enum(ATTEMPT_OUTCOMES),
    statusCode: z.number().int().nullable(),
    errorClass: z.string().nullable(),
    errorMessage: z.string().nullable(),
    responseExcerpt: z.string().nullable().describe("The first bytes of the subscriber's answer."),
    signature: z
      .object({
        timestamp: z.number().int(),
        scheme: z.enum(SIGNATURE_SCHEMES),
        signatures: z.number().int(),
        mode: z.enum(TEST_MODES).optional().describe("A test event's test mode, when it was sent in one."),
      })
      .describe("What was signed, never with what."),
    nextAttempt: timestamp.nullable(),
  })
  .meta({ id: "WebhookAttempt" });

export const dispatchDetailSchema = dispatchSchema
  .extend({
    payload: z.string().describe("The exact bytes POSTed on every attempt."),
    attemptLog: z.array(attemptSchema).describe("Every attempt, oldest first."),
  })
  .meta({ id: "WebhookDispatchDetail" });

export const recoverySchema = z
  .object({
    id: z.string(),
    object: z.literal("webhook_recovery"),
    webhook: z.string(),
    status: z.enum(RECOVERY_STATUSES),
    since: timestamp,
    until: timestamp,
    total: z.number().int().nullable().describe("Failed and exhausted dispatches in the window; null until started."),
    requeued: z.number().int().describe("Put back to pending so far."),
    delivered: z.number().int().describe("Of those, delivered since."),
    failed: z.number().int().describe("Of those, exhausted again."),
    created: timestamp,
    started: timestamp.nullable(),
    completed: timestamp.nullable(),
  })
  .meta({ id: "WebhookRecovery" });

export function presentDispatch(row: WebhookDispatch): z.output<typeof dispatchSchema> {
  const open = row.status === "pending" || row.status === "error";
  return {
    id: row.id,
    object: "webhook_dispatch",
    webhook: row.webhookId,
    event: { id: row.eventId, type: row.eventType },
    status: row.status,
    run: row.run,
    attempts: row.attemptCount,
    lastStatusCode: row.lastStatusCode,
    lastError: row.lastError,
    nextAttempt: open ? row.nextAttemptAt.toISOString() : null,
    created: row.createdAt.toISOString(),
    updated: row.updatedAt.toISOString(),
    completed: isoOrNull(row.completedAt),
  };
}

export function presentAttempt(row: WebhookAttempt): z.output<typeof attemptSchema> {
  return {
    run: row.run,
    attempt: row.attempt,
    started: row.startedAt.toISOString(),
    durationMs: row.durationMs,
    outcome: row.outcome,
    statusCode: row.statusCode,
    errorClass: row.errorClass,
    errorMessage: row.errorMessage,
    responseExcerpt: row.responseExcerpt,
    signature: row.signature,
    nextAttempt: isoOrNull(row.nextAttemptAt),
  };
}

export function presentRecovery(
  row: WebhookRecovery,
  outcome: { delivered: number; failed: number },
): z.output<typeof recoverySchema> {
  return {
    id: row.id,
    object: "webhook_recovery",
    webhook: row.webhookId,
    status: row.status,
    since: row.since.toISOString(),
    until: row.until.toISOString(),
    total: row.total,
    requeued: row.requeued,
    delivered: outcome.delivered,
    failed: outcome.failed,
    created: row.createdAt.toISOString(),
    started: isoOrNull(row.startedAt),
    completed: isoOrNull(row.completedAt),
  };
}
