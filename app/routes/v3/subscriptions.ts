import { eq } from "drizzle-orm";
import { Hono } from "hono";
import { z } from "zod";
import { handler, jsonBody, ok, type ApiContext } from "../../../lib/api/handler.ts";
import type { HooklaneEnv } from "../../../lib/api/hono-env.ts";
import { notFound } from "../../../lib/api/problem.ts";
import { subscription, subscriptionHistory, type Subscription } from "../../../lib/db/schema.ts";
import { owningAccount, requestedRow } from "./tenancy.ts";

const plan = z.string().trim().min(1).max(100);

const createSubscription = z.object({ plan, account: z.string().min(1).optional() });

const updateSubscription = z
  .object({ plan, status: z.enum(["active", "paused", "canceled"]) })
  .partial()
  .refine((body) => Object.keys(body).length > 0, "must change at least one field");

/** Subscriptions: rows of one account; an admin sees and creates them for any account. */
export function subscriptionRoutes(): Hono<HooklaneEnv> {
  const app = new Hono<HooklaneEnv>();

  app.post(
    "/v3/subscriptions",
    handler(async (c) => {
      const input = createSubscription.parse(await jsonBody(c));
      const owner = await owningAccount(c, input.account);
      const [row] = await c.var.database.db
        .insert(subscription)
        .values({ ...input, account: owner })
        .returning();
      return ok(c, row, 201);
    }),
  );

  app.patch(
    "/v3/subscriptions/:id",
    handler(async (c) => {
      const input = updateSubscription.parse(await jsonBody(c));
      const [row] = await c.var.database.db
        .update(subscription)
        .set(input)
        .where(requestedRow(c, subscription.id, subscription.account))
        .returning();
      if (!row) throw notFound("subscription");
      return ok(c, row);
    }),
  );

  app.delete(
    "/v3/subscriptions/:id",
    handler(async (c) => {
      const id = await c.var.database.db.transaction(async (tx) => {
        const [row] = await tx
          .select({ id: subscription.id })
          .from(subscription)
          .where(requestedRow(c, subscription.id, subscription.account))
          .for("update");
        if (!row) throw notFound("subscription");
        // The history rows reference the subscription, so they go first.
        await tx.delete(subscriptionHistory).where(eq(subscriptionHistory.subscription, row.id));
        await tx.delete(subscription).where(eq(subscription.id, row.id));
        return row.id;
      });
      return ok(c, { id, deleted: true });
    }),
  );

  app.get(
    "/v3/subscriptions/:id",
    handler(async (c) => c.json(await requestedSubscription(c))),
  );

  return app;
}

/** The subscription named by `:id` if the caller may see it; throws a 404 otherwise. */
export async function requestedSubscription(c: ApiContext): Promise<Subscription> {
  const [row] = await c.var.database.db
    .select()
    .from(subscription)
    .where(requestedRow(c, subscription.id, subscription.account));
  if (!row) throw notFound("subscription");
  return row;
}
