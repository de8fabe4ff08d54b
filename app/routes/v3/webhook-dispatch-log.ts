import { and, asc, desc, eq, gte, lt } from "drizzle-orm";
import { z } from "zod";
import type { OperationRouter } from "../../../lib/api/operation.ts";
import { notFound } from "../../../lib/api/problem.ts";
import { DISPATCH_STATUSES, webhookAttempt, webhookDispatch } from "../../../lib/db/schema.ts";
import { afterCursor } from "../../../lib/db/sql/keyset-cursor.ts";
import { dispatchInScope, findWebhook } from "../../../lib/webhook/webhook-scope.ts";
import {
  dispatchDetailSchema,
  dispatchIdParams,
  dispatchSchema,
  presentAttempt,
  presentDispatch,
} from "./dispatch-schemas.ts";
import { listOf, listPage, pageQuery, timestamp, unknownCursor, webhookIdParams } from "./webhook-schemas.ts";

const logQuery = z.object({
  status: z.enum(DISPATCH_STATUSES).optional().describe("Only dispatches in this status."),
  since: timestamp.optional().describe("Only events created at or after this time."),
  until: timestamp.optional().describe("Only events created before this time."),
  ...pageQuery,
});

/** The delivery log: `GET /v3/webhooks/:id/dispatches` and `GET /v3/webhook-dispatches/:id`. */
export function addWebhookDispatchLog(router: OperationRouter): void {
  router.add(
    {
      method: "get",
      path: "/v3/webhooks/:id/dispatches",
      operationId: "listWebhookDispatches",
      summary: "List a webhook's deliveries",
      description: "One row per event sent to this webhook, newest first.",
      tag: "Delivery log",
      params: webhookIdParams,
      query: logQuery,
      responses: { 200: { description: "A page of dispatches.", schema: listOf(dispatchSchema) } },
    },
    async (c, { params, query }) => {
      const { database } = c.var.hooklane;
      const hook = await findWebhook(database, c.var.principal, params.id);
      const ofHook = eq(webhookDispatch.webhookId, hook.id);
      if (query.cursor) {
        const [cursor] = await database.db
          .select({ id: webhookDispatch.id })
          .from(webhookDispatch)
          .where(and(ofHook, eq(webhookDispatch.id, query.cursor)));
        if (!cursor) throw unknownCursor();
      }
      const rows = await database.db
        .select()
        .from(webhookDispatch)
        .where(
          and(
            ofHook,
            query.status ? eq(webhookDispatch.status, query.status) : undefined,
            query.since ? gte(webhookDispatch.createdAt, new Date(query.since)) : undefined,
            query.until ? lt(webhookDispatch.createdAt, new Date(query.until)) : undefined,
            query.cursor ? afterCursor(webhookDispatch, webhookDispatch, query.cursor) : undefined,
          ),
        )
        .orderBy(desc(webhookDispatch.createdAt), desc(webhookDispatch.id))
        .limit(query.limit + 1);
      return c.json(listPage(rows, query.limit, presentDispatch));
    },
  );

  router.add(
    {
      method: "get",
      path: "/v3/webhook-dispatches/:id",
      operationId: "getWebhookDispatch",
      summary: "Get a delivery with all its attempts",
      tag: "Delivery log",
      params: dispatchIdParams,
      responses: { 200: { description: "The dispatch and its attempts.", schema: dispatchDetailSchema } },
    },
    async (c, { params }) => {
      const { db } = c.var.hooklane.database;
      const [row] = await db.select().from(webhookDispatch).where(dispatchInScope(c.var.principal, params.id));
      if (!row) throw notFound("dispatch");
      const attempts = await db
        .select()
        .from(webhookAttempt)
        .where(eq(webhookAttempt.dispatchId, row.id))
        .orderBy(asc(webhookAttempt.run), asc(webhookAttempt.attempt));
      return c.json({ ...presentDispatch(row), payload: row.payload, attemptLog: attempts.map(presentAttempt) });
    },
  );
}
