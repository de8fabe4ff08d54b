import { and, desc } from "drizzle-orm";
import { z } from "zod";
import type { OperationRouter } from "../../../lib/api/operation.ts";
import type { Principal } from "../../../lib/auth/jwt.ts";
import type { Db } from "../../../lib/db/client.ts";
import { webhook } from "../../../lib/db/schema.ts";
import { afterCursor } from "../../../lib/db/sql/keyset-cursor.ts";
import { findWebhook, webhookInScope, webhookScope } from "../../../lib/webhook/webhook-scope.ts";
import {
  listOf,
  listPage,
  pageQuery,
  unknownCursor,
  presentWebhook,
  webhookIdParams,
  webhookSchema,
} from "./webhook-schemas.ts";

/** `GET /v3/webhooks` (newest first, cursor pages) and `GET /v3/webhooks/:id`. */
export function addWebhookRead(router: OperationRouter): void {
  router.add(
    {
      method: "get",
      path: "/v3/webhooks",
      operationId: "listWebhooks",
      summary: "List webhooks",
      description: "The caller's account's webhooks, and the global ones for an admin; newest first.",
      tag: "Webhooks",
      query: z.object(pageQuery),
      responses: { 200: { description: "A page of webhooks.", schema: listOf(webhookSchema) } },
    },
    async (c, { query }) => {
      const { db } = c.var.hooklane.database;
      const { principal } = c.var;
      if (query.cursor) await findCursor(db, principal, query.cursor);
      const rows = await db
        .select()
        .from(webhook)
        .where(and(webhookScope(principal), query.cursor ? afterCursor(webhook, webhook, query.cursor) : undefined))
        .orderBy(desc(webhook.createdAt), desc(webhook.id))
        .limit(query.limit + 1);
      return c.json(listPage(rows, query.limit, presentWebhook));
    },
  );

  router.add(
    {
      method: "get",
      path: "/v3/webhooks/:id",
      operationId: "getWebhook",
      summary: "Get a webhook",
      tag: "Webhooks",
      params: webhookIdParams,
      responses: { 200: { description: "The webhook.", schema: webhookSchema } },
    },
    async (c, { params }) => c.json(presentWebhook(await findWebhook(c.var.database, c.var.principal, params.id))),
  );
}

async function findCursor(db: Db, principal: Principal, cursor: string): Promise<void> {
  const [row] = await db.select({ id: webhook.id }).from(webhook).where(webhookInScope(principal, cursor));
  if (!row) throw unknownCursor();
}
