import { z } from "zod";
import { recordAudit } from "../../../lib/audit/audit-log.ts";
import type { OperationRouter } from "../../../lib/api/operation.ts";
import { timestamp } from "../../../lib/api/timestamps.ts";
import { healthHistory, HISTORY_WINDOWS, type HealthHistory } from "../../../lib/webhook/health/health-history.ts";
import { findWebhook } from "../../../lib/webhook/webhook-scope.ts";

const historyQuery = z.strictObject({
  window: z
    .enum(Object.keys(HISTORY_WINDOWS) as ["24h", "7d"])
    .default("24h")
    .describe("`24h`: 24 one-hour slots; `7d`: 28 six-hour slots."),
  webhook: z
    .string()
    .min(1)
    .max(100)
    .optional()
    .describe("One webhook's history; without it, every webhook of the caller's account summed."),
});

const slotSchema = z.strictObject({
  start: timestamp.describe("The slot's start; a slot lasts `slotHours`."),
  attempts: z.number().int().describe("Attempts started in the slot (test events are not counted)."),
  succeeded: z.number().int().describe("Of those, answered 2xx."),
  failed: z.number().int().describe("Of those, failed: attempts − succeeded."),
  latencyMs: z
    .strictObject({
      p50: z.number().describe("Median attempt duration, ms."),
      p95: z.number().describe("95th percentile attempt duration, ms."),
    })
    .nullable()
    .describe("Attempt durations in the slot, within 7 %; null without attempts."),
});

export const healthHistorySchema = z
  .strictObject({
    object: z.literal("health-history"),
    webhook: z.string().nullable().describe("The webhook; null for the account's sum."),
    account: z.string().nullable().describe("The account summed; null for one webhook."),
    window: z.enum(["24h", "7d"]).describe("The window asked for."),
    slotHours: z.number().int().describe("Hours per slot: 1 over 24 h, 6 over 7 days."),
    slots: z.array(slotSchema).describe("Oldest first; the last slot holds the current hour."),
  })
  .meta({
    id: "HealthHistory",
    examples: [
      {
        object: "health-history",
        webhook: "wh_3e8a1f0c9b2d4e7f8a6c5b4d3e2f1a0b",
        account: null,
        window: "24h",
        slotHours: 1,
        slots: [
          {
            start: "2026-03-01T11:00:00.000Z",
            attempts: 40,
            succeeded: 38,
            failed: 2,
            latencyMs: { p50: 84, p95: 412 },
          },
        ],
      },
    ],
  });

/** The answer of `GET /v3/health-history`. */
export function presentHealthHistory(
  of: { webhook: string } | { account: string },
  history: HealthHistory,
): z.input<typeof healthHistorySchema> {
  return {
    object: "health-history",
    webhook: "webhook" in of ? of.webhook : null,
    account: "account" in of ? of.account : null,
    window: history.window,
    slotHours: history.slotHours,
    slots: history.slots.map((slot) => ({
      start: slot.start.toISOString(),
      attempts: slot.attempts,
      succeeded: slot.succeeded,
      failed: slot.attempts - slot.succeeded,
      latencyMs: slot.latencyMs,
    })),
  };
}

/** `GET /v3/health-history`: delivery outcomes and latency over 24 hours or 7 days, per webhook or per account. */
export function addHealthHistory(router: OperationRouter): void {
  router.add(
    {
      method: "get",
      path: "/v3/health-history",
      operationId: "getHealthHistory",
      summary: "Get delivery health over time",
      description:
        "Successes, failures and attempt latency (p50, p95) slot by slot over the last 24 hours or 7 days, for one webhook or summed over the caller's account: what the console draws. Kept by the lane as it records attempts; test events are not counted.",
      tag: "Webhooks",
      query: historyQuery,
      responses: { 200: { description: "The history, oldest slot first.", schema: healthHistorySchema } },
    },
    async (c, { query }) => {
      const database = c.get("database");
      const principal = c.get("principal");
      if (query.webhook === undefined) {
        const history = await healthHistory(database, { account: principal.account }, query.window);
        return c.json(presentHealthHistory({ account: principal.account }, history));
      }
      const hook = await findWebhook(database, principal, query.webhook, { support: true, deleted: true });
      await recordAudit(database, principal, { action: "webhook.health-read", target: hook.id, account: hook.account });
      const history = await healthHistory(database, { webhookId: hook.id }, query.window);
      return c.json(presentHealthHistory({ webhook: hook.id }, history));
    },
  );
}
