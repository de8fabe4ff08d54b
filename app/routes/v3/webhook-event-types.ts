import { asc, eq } from "drizzle-orm";
import { z } from "zod";
import type { OperationRouter } from "../../../lib/api/operation.ts";
import { webhookEventType, type WebhookEventType } from "../../../lib/db/schema.ts";
import { listOf } from "./webhook-schemas.ts";

/** An event type as subscribers see it: never the route or the tables behind it. */
export function presentEventType(row: WebhookEventType) {
  return {
    object: "webhook-event-type" as const,
    type: row.internal,
    description: row.description,
    resource: row.resource,
    /** `none`: no account owns it, so only global webhooks hear it. */
    ownerKind: row.ownerKind,
    example: row.example,
    since: row.since,
    deprecated: row.deprecated,
  };
}

const eventTypeSchema = z.object({
  object: z.literal("webhook-event-type"),
  type: z.string().describe("e.g. payment-debt.created"),
  description: z.string(),
  resource: z.string(),
  ownerKind: z.enum(["self", "direct", "via", "none"]),
  example: z.unknown().describe("A thin body as subscribers receive it."),
  since: z.string(),
  deprecated: z.boolean(),
});

/** `GET /v3/webhook-event-types`: the synced catalogue, without deprecated types, sorted by type. */
export function addWebhookEventTypes(router: OperationRouter): void {
  router.add(
    {
      method: "get",
      path: "/v3/webhook-event-types",
      operationId: "listWebhookEventTypes",
      summary: "List event types",
      description: "The events a webhook can subscribe to in this environment (the synced catalogue).",
      tag: "Event types",
      responses: { 200: { description: "Every event type you can subscribe to.", schema: listOf(eventTypeSchema) } },
    },
    async (c) => {
      const rows = await c.var.database.db
        .select()
        .from(webhookEventType)
        .where(eq(webhookEventType.deprecated, false))
        .orderBy(asc(webhookEventType.internal));
      return c.json({ object: "list", data: rows.map(presentEventType), nextCursor: null });
    },
  );
}
