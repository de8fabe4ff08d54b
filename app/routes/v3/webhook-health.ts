import { z } from "zod";
import type { OperationRouter } from "../../../lib/api/operation.ts";
import { webhookHealth, type WebhookHealth } from "../../../lib/webhook/health/webhook-health.ts";
import { recordAudit } from "../../../lib/audit/audit-log.ts";
import { findWebhook } from "../../../lib/webhook/webhook-scope.ts";
import { timestamp } from "../../../lib/api/timestamps.ts";
import { webhookIdParams } from "./webhook-schemas.ts";

export const webhookHealthSchema = z
  .object({
    object: z.literal("webhook-health"),
    webhook: z.string().describe("The webhook it is about (`wh_…`)."),
    verdict: z
      .enum(["healthy", "degraded", "failing", "idle"])
      .describe(
        "`failing`: the circuit breaker is not closed, 5 attempts failed in a row, or nothing succeeded in the window; `degraded`: the last attempt failed or under 95 % succeeded; `idle`: no attempt in the window.",
      ),
    since: timestamp.describe("Start of the window: the start of the hour 24 hours ago."),
    attempts: z.number().int().describe("Attempts started in the window."),
    succeeded: z.number().int().describe("Of those, the ones that succeeded."),
    successRate: z.number().nullable().describe("succeeded / attempts; null without attempts."),
    latencyMs: z
      .object({
        p50: z.number().describe("Median attempt duration, in ms."),
        p95: z.number().describe("95th percentile attempt duration, in ms."),
      })
      .nullable()
      .describe("Attempt durations in the window, in ms, within 7 %; null without attempts."),
    failuresInARow: z.number().int().describe("Failed attempts since the last success."),
    lastAttempt: timestamp.nullable().describe("When the latest attempt started; null if none was made."),
    lastSuccess: timestamp
      .nullable()
      .describe("When the latest successful attempt started; null if none has succeeded."),
    lastFailure: timestamp.nullable().describe("When the latest failed attempt started; null if none has failed."),
    lastError: z.string().nullable().describe("`<error class>: <message>` of the last failed attempt."),
    lastStatusCode: z.number().int().nullable().describe("The last attempt's HTTP status; null without an answer."),
    backlog: z
      .object({
        pending: z.number().int().describe("Waiting for their first attempt."),
        error: z.number().int().describe("Failed, waiting for a retry."),
        inFlight: z.number().int().describe("Being attempted now."),
      })
      .describe("Deliveries not finished yet."),
    nextAttempt: timestamp.nullable().describe("When the next attempt is due; null when nothing waits or paused."),
    breaker: z
      .object({
        state: z
          .enum(["closed", "open", "half-open"])
          .describe("`open`: the endpoint is unreachable and deliveries wait; `half-open`: one probe may go."),
        failures: z.number().int().describe("Connection-level failures in a row."),
        openUntil: timestamp
          .nullable()
          .describe("When the open breaker lets its probe through (past when `half-open`); null when `closed`."),
      })
      .describe("The endpoint's circuit breaker."),
  })
  .meta({
    id: "WebhookHealth",
    examples: [
      {
        object: "webhook-health",
        webhook: "wh_3e8a1f0c9b2d4e7f8a6c5b4d3e2f1a0b",
        verdict: "degraded",
        since: "2026-02-28T12:00:00.000Z",
        attempts: 410,
        succeeded: 380,
        successRate: 0.9268,
        latencyMs: { p50: 84, p95: 412 },
        failuresInARow: 1,
        lastAttempt: "2026-03-01T11:59:40.000Z",
        lastSuccess: "2026-03-01T11:58:10.000Z",
        lastFailure: "2026-03-01T11:59:40.000Z",
        lastError: "status: the subscriber answered 503",
        lastStatusCode: 503,
        backlog: { pending: 0, error: 1, inFlight: 0 },
        nextAttempt: "2026-03-01T12:04:40.000Z",
        breaker: { state: "closed", failures: 0, openUntil: null },
      },
    ],
  });

const iso = (date: Date | null) => date?.toISOString() ?? null;

/** The answer of `GET /v3/webhooks/:id/health`. */
export function presentWebhookHealth(webhookId: string, health: WebhookHealth): z.input<typeof webhookHealthSchema> {
  return {
    object: "webhook-health",
    webhook: webhookId,
    verdict: health.verdict,
    since: health.since.toISOString(),
    attempts: health.attempts,
    succeeded: health.succeeded,
    successRate: health.successRate,
    latencyMs: health.latencyMs,
    failuresInARow: health.failuresInARow,
    lastAttempt: iso(health.lastAttemptAt),
    lastSuccess: iso(health.lastSuccessAt),
    lastFailure: iso(health.lastFailureAt),
    lastError: health.lastError,
    lastStatusCode: health.lastStatusCode,
    backlog: health.backlog,
    nextAttempt: iso(health.nextAttemptAt),
    breaker: { ...health.breaker, openUntil: iso(health.breaker.openUntil) },
  };
}

/** `GET /v3/webhooks/:id/health`: how the endpoint's deliveries went over the last 24 hours, and what waits. */
export function addWebhookHealth(router: OperationRouter): void {
  router.add(
    {
      method: "get",
      path: "/v3/webhooks/:id/health",
      operationId: "getWebhookHealth",
      summary: "Get a webhook's delivery health",
      description:
        "Success rate and attempt latency over the last 24 hours, failures in a row and the last error, what waits, when the next attempt is due, and the circuit breaker. Kept by the lane as it records attempts.",
      tag: "Webhooks",
      params: webhookIdParams,
      responses: { 200: { description: "The webhook's delivery health.", schema: webhookHealthSchema } },
    },
    async (c, { params }) => {
      const database = c.get("database");
      const hook = await findWebhook(database, c.get("principal"), params.id, { support: true });
      await recordAudit(database, c.get("principal"), {
        action: "webhook.health-read",
        target: hook.id,
        account: hook.account,
      });
      return c.json(presentWebhookHealth(hook.id, await webhookHealth(database, hook)));
    },
  );
}
