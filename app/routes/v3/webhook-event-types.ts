import { and, eq, sql } from "drizzle-orm";
import { z } from "zod";
import { listOf, listPage, pageQuery, unknownCursor } from "../../../lib/api/list-page.ts";
import type { OperationRouter } from "../../../lib/api/operation.ts";
import { iso, timestamp } from "../../../lib/api/timestamps.ts";
import { exampleAsDelivered } from "../../../lib/webhook/catalogue/catalogue-entry.ts";
import { catalogueByInternal } from "../../../lib/webhook/catalogue/webhook-event-catalogue.ts";
import { webhookEventType, type WebhookEventType } from "../../../lib/db/schema.ts";
import { eventBodySchema } from "./dispatch-schemas.ts";

export const eventTypeSchema = z
  .strictObject({
    id: z.string().describe("The type's name, e.g. `payment-debt.created`: what a webhook's `events` lists."),
    object: z.literal("webhook-event-type"),
    description: z.string().describe("What happened, in a sentence for people."),
    resource: z.string().describe("The `data.object` of its events, and the `object` of the resource read back."),
    ownerKind: z
      .enum(["self", "direct", "via", "none"])
      .describe("How its account is found; `none`: no account owns it, so only global webhooks hear it."),
    attributes: z
      .array(z.string())
      .describe(
        "What a webhook's `filter` may read of these events: attributes of the resource, read when the event is published. Never in the body.",
      ),
    example: eventBodySchema.describe("A body as subscribers receive it."),
    since: z.iso.date().describe("The catalogue date it was introduced."),
    deprecated: z
      .boolean()
      .describe(
        "A deprecated type takes no new subscriptions and gets no deliveries; this list leaves them out, so it reads `false` here.",
      ),
    created: timestamp.describe("When it was first synced into this environment."),
    updated: timestamp,
  })
  .meta({
    id: "WebhookEventType",
    examples: [
      {
        id: "payment-debt.created",
        object: "webhook-event-type",
        description: "A payment debt was opened for an account.",
        resource: "payment-debt",
        ownerKind: "direct",
        attributes: ["currency", "status"],
        example: (eventBodySchema.meta()!.examples as unknown[])[0],
        since: "2026-12-01",
        deprecated: false,
        created: "2026-12-01T09:30:00.000Z",
        updated: "2026-12-01T09:30:00.000Z",
      },
    ],
  });

/** An event type as subscribers see it: never the route or the tables behind it. */
export function presentEventType(row: WebhookEventType): z.output<typeof eventTypeSchema> {
  return {
    id: row.internal,
    object: "webhook-event-type",
    description: row.description,
    resource: row.resource,
    ownerKind: row.ownerKind,
    // This release's catalogue: what its publisher captures.
    attributes: catalogueByInternal(row.internal)?.attributes?.columns ?? [],
    example: exampleAsDelivered(row.example) as z.output<typeof eventBodySchema>,
    since: row.since,
    deprecated: row.deprecated,
    created: iso(row.createdAt),
    updated: iso(row.updatedAt),
  };
}

/** `GET /v3/webhook-event-types`: the synced catalogue, without deprecated types, by name. */
export function addWebhookEventTypes(router: OperationRouter): void {
  router.add(
    {
      method: "get",
      path: "/v3/webhook-event-types",
      operationId: "listWebhookEventTypes",
      summary: "List event types",
      description:
        "The events a webhook can subscribe to in this environment (the synced catalogue), sorted by name rather than newest first: the one list whose order is alphabetical.",
      tag: "Event types",
      query: z.strictObject(pageQuery),
      responses: {
        200: { description: "A page of the event types you can subscribe to.", schema: listOf(eventTypeSchema) },
      },
    },
    async (c, { query }) => {
      const { db } = c.get("database");
      const current = eq(webhookEventType.deprecated, false);
      if (query.cursor) {
        const [found] = await db
          .select({ id: webhookEventType.internal })
          .from(webhookEventType)
          .where(and(current, eq(webhookEventType.internal, query.cursor)));
        if (!found) throw unknownCursor();
      }
      // Byte order ("C"), so pages are the same whatever the database's collation.
      const name = sql`${webhookEventType.internal} collate "C"`;
      const rows = await db
        .select()
        .from(webhookEventType)
        .where(and(current, query.cursor ? sql`${name} > ${query.cursor}` : undefined))
        .orderBy(name)
        .limit(query.limit + 1);
      return c.json(
        listPage(
          rows.map((row) => ({ ...row, id: row.internal })),
          query.limit,
          presentEventType,
        ),
      );
    },
  );
}
