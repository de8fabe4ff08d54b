import { eq } from "drizzle-orm";
import { z } from "zod";
import { ok, type ApiContext } from "../../../lib/api/handler.ts";
import type { OperationRouter } from "../../../lib/api/operation.ts";
import { notFound } from "../../../lib/api/problem.ts";
import { iso, timestamp } from "../../../lib/api/timestamps.ts";
import { subscription, subscriptionHistory, type Subscription } from "../../../lib/db/schema.ts";
import { changesSomething, deleted, deletedSchema, idParams } from "./resource-fields.ts";
import { insertForOwner, requestedRow } from "./tenancy.ts";

const SUBSCRIPTION_STATUSES = ["active", "paused", "canceled"] as const;

const EXAMPLE = {
  id: "sub_7c2d9e4f1a3b4c5d6e7f8a9b0c1d2e3f",
  object: "subscription",
  account: "acc_4b1f9e2c7d8a4e6f9b0c1d2e3f4a5b6c",
  plan: "pro",
  status: "active",
  created: "2026-12-01T09:30:00.000Z",
} as const;

export const subscriptionSchema = z
  .strictObject({
    id: z.string().describe("`sub_…`"),
    object: z.literal("subscription"),
    account: z.string().describe("The owning account (`acc_…`)."),
    plan: z.string().describe("The plan's name, free text (e.g. `pro`)."),
    status: z.enum(SUBSCRIPTION_STATUSES).describe("`active` when created; after that, whatever a PATCH last set."),
    created: timestamp,
  })
  .meta({ id: "Subscription", examples: [EXAMPLE] });

export function presentSubscription(row: Subscription): z.output<typeof subscriptionSchema> {
  return {
    id: row.id,
    object: "subscription",
    account: row.account,
    plan: row.plan,
    status: row.status as (typeof SUBSCRIPTION_STATUSES)[number],
    created: iso(row.createdAt),
  };
}

const plan = z
  .string()
  .trim()
  .min(1)
  .max(100)
  .describe("The plan's name, free text (e.g. `pro`); surrounding spaces are trimmed.");

const createSubscription = z
  .strictObject({
    plan,
    account: z.string().min(1).max(100).optional().describe("Admins only: the owning account; others get their own."),
  })
  .meta({ examples: [{ plan: "pro" }] });

const updateSubscription = z
  .strictObject({ plan, status: z.enum(SUBSCRIPTION_STATUSES).describe("The subscription's new status.") })
  .partial()
  .refine(...changesSomething)
  .meta({ examples: [{ status: "paused" }] });

export const subscriptionParams = idParams("The subscription's id (`sub_…`).");

/** Subscriptions: rows of one account; an admin sees and creates them for any account. */
export function addSubscriptionRoutes(router: OperationRouter): void {
  const tag = "Subscriptions";

  router.add(
    {
      method: "post",
      path: "/v3/subscriptions",
      operationId: "createSubscription",
      summary: "Create a subscription",
      description: "Emits `subscription.created`.",
      tag,
      body: createSubscription,
      responses: { 201: { description: "The new subscription.", schema: subscriptionSchema } },
    },
    async (c, { body }) => {
      const [row] = await insertForOwner(c, body.account, "sub", (db, owner, id) =>
        db
          .insert(subscription)
          .values({ ...body, id, account: owner })
          .returning(),
      );
      return ok(c, presentSubscription(row!), 201);
    },
  );

  router.add(
    {
      method: "patch",
      path: "/v3/subscriptions/:id",
      operationId: "updateSubscription",
      summary: "Update a subscription",
      description: "Emits `subscription.updated`.",
      tag,
      params: subscriptionParams,
      body: updateSubscription,
      responses: { 200: { description: "The updated subscription.", schema: subscriptionSchema } },
    },
    async (c, { body }) => {
      const [row] = await c
        .get("database")
        .db.update(subscription)
        .set(body)
        .where(requestedRow(c, subscription.id, subscription.account))
        .returning();
      if (!row) throw notFound("subscription");
      return ok(c, presentSubscription(row));
    },
  );

  router.add(
    {
      method: "delete",
      path: "/v3/subscriptions/:id",
      operationId: "deleteSubscription",
      summary: "Delete a subscription and its history",
      description: "Emits `subscription.purged`.",
      tag,
      params: subscriptionParams,
      responses: {
        200: { description: "Deleted.", schema: deletedSchema("subscription", "DeletedSubscription", EXAMPLE.id) },
      },
    },
    async (c) => {
      const id = await c.get("database").db.transaction(async (tx) => {
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
      return ok(c, deleted("subscription", id));
    },
  );

  router.add(
    {
      method: "get",
      path: "/v3/subscriptions/:id",
      operationId: "getSubscription",
      summary: "Get a subscription",
      tag,
      params: subscriptionParams,
      responses: { 200: { description: "The subscription.", schema: subscriptionSchema } },
    },
    async (c) => c.json(presentSubscription(await requestedSubscription(c))),
  );
}

/** The subscription named by `:id` if the caller may see it; throws a 404 otherwise. */
export async function requestedSubscription(c: ApiContext): Promise<Subscription> {
  const [row] = await c
    .get("database")
    .db.select()
    .from(subscription)
    .where(requestedRow(c, subscription.id, subscription.account));
  if (!row) throw notFound("subscription");
  return row;
}
