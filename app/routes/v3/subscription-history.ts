import { eq } from "drizzle-orm";
import { z } from "zod";
import { ok } from "../../../lib/api/handler.ts";
import { listOf, listPage, pageQuery, readNewestFirst } from "../../../lib/api/list-page.ts";
import type { OperationRouter } from "../../../lib/api/operation.ts";
import { iso, timestamp } from "../../../lib/api/timestamps.ts";
import { subscriptionHistory, type SubscriptionHistory } from "../../../lib/db/schema.ts";
import { requestedSubscription, subscriptionParams } from "./subscriptions.ts";

export const historyEntrySchema = z
  .strictObject({
    id: z.string().describe("`sh_…`"),
    object: z.literal("subscription.history"),
    subscription: z.string().describe("The subscription it belongs to (`sub_…`)."),
    change: z.string().describe("What changed, in words, e.g. `upgraded from basic to pro`."),
    created: timestamp,
  })
  .meta({
    id: "SubscriptionHistoryEntry",
    examples: [
      {
        id: "sh_5a9b3c7d1e2f4a6b8c0d1e2f3a4b5c6d",
        object: "subscription.history",
        subscription: "sub_7c2d9e4f1a3b4c5d6e7f8a9b0c1d2e3f",
        change: "upgraded from basic to pro",
        created: "2026-12-01T09:30:00.000Z",
      },
    ],
  });

export function presentHistoryEntry(row: SubscriptionHistory): z.output<typeof historyEntrySchema> {
  return {
    id: row.id,
    object: "subscription.history",
    subscription: row.subscription,
    change: row.change,
    created: iso(row.createdAt),
  };
}

const createHistoryEntry = z
  .strictObject({
    change: z
      .string()
      .trim()
      .min(1)
      .max(1000)
      .describe("What changed, in words, e.g. `upgraded from basic to pro`; surrounding spaces are trimmed."),
  })
  .meta({ examples: [{ change: "upgraded from basic to pro" }] });

/** A subscription's history: entries belong to whoever may see the subscription. */
export function addSubscriptionHistoryRoutes(router: OperationRouter): void {
  const tag = "Subscriptions";

  router.add(
    {
      method: "post",
      path: "/v3/subscriptions/:id/history",
      operationId: "createSubscriptionHistoryEntry",
      summary: "Record a change in a subscription's history",
      description: "Emits `subscription.history.created`.",
      tag,
      params: subscriptionParams,
      body: createHistoryEntry,
      responses: { 201: { description: "The new entry.", schema: historyEntrySchema } },
    },
    async (c, { body }) => {
      const parent = await requestedSubscription(c);
      const [row] = await c
        .get("database")
        .db.insert(subscriptionHistory)
        .values({ subscription: parent.id, change: body.change })
        .returning();
      return ok(c, presentHistoryEntry(row!), 201);
    },
  );

  router.add(
    {
      method: "get",
      path: "/v3/subscriptions/:id/history",
      operationId: "listSubscriptionHistory",
      summary: "List a subscription's history",
      description: "Newest first.",
      tag,
      params: subscriptionParams,
      query: z.strictObject(pageQuery),
      responses: { 200: { description: "A page of history entries.", schema: listOf(historyEntrySchema) } },
    },
    async (c, { query }) => {
      const parent = await requestedSubscription(c);
      const rows = await readNewestFirst(c.get("database").db, subscriptionHistory, {
        scope: eq(subscriptionHistory.subscription, parent.id),
        ...query,
      });
      return c.json(listPage(rows, query.limit, presentHistoryEntry));
    },
  );
}
