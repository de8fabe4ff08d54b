import { asc, eq } from "drizzle-orm";
import { Hono } from "hono";
import { z } from "zod";
import { handler, jsonBody, ok } from "../../../lib/api/handler.ts";
import type { HooklaneEnv } from "../../../lib/api/hono-env.ts";
import { subscriptionHistory } from "../../../lib/db/schema.ts";
import { requestedSubscription } from "./subscriptions.ts";

const createHistoryEntry = z.object({ change: z.string().trim().min(1).max(1000) });

/** A subscription's history: entries belong to whoever may see the subscription. */
export function subscriptionHistoryRoutes(): Hono<HooklaneEnv> {
  const app = new Hono<HooklaneEnv>();

  app.post(
    "/v3/subscriptions/:id/history",
    handler(async (c) => {
      const input = createHistoryEntry.parse(await jsonBody(c));
      const parent = await requestedSubscription(c);
      const [row] = await c.var.database.db
        .insert(subscriptionHistory)
        .values({ subscription: parent.id, change: input.change })
        .returning();
      return ok(c, row, 201);
    }),
  );

  app.get(
    "/v3/subscriptions/:id/history",
    handler(async (c) => {
      const parent = await requestedSubscription(c);
      const data = await c.var.database.db
        .select()
        .from(subscriptionHistory)
        .where(eq(subscriptionHistory.subscription, parent.id))
        .orderBy(asc(subscriptionHistory.createdAt), asc(subscriptionHistory.id));
      return c.json({ data });
    }),
  );

  return app;
}
