import { heldBehind } from "../../../lib/db/sql/ordering-holds.ts";
import { and, asc, eq, gte, lt, sql } from "drizzle-orm";
import { z } from "zod";
import { listOf, listPage, pageQuery, readNewestFirst } from "../../../lib/api/list-page.ts";
import type { OperationRouter } from "../../../lib/api/operation.ts";
import { notFound } from "../../../lib/api/problem.ts";
import { timestampInput } from "../../../lib/api/timestamps.ts";
import { recordAudit } from "../../../lib/audit/audit-log.ts";
import { DISPATCH_STATUSES, webhook, webhookAttempt, webhookDispatch } from "../../../lib/db/schema.ts";
import { dispatchInScope, findWebhook } from "../../../lib/webhook/webhook-scope.ts";
import {
  dispatchDetailSchema,
  dispatchIdParams,
  dispatchSchema,
  presentDispatch,
  presentDispatchDetail,
} from "./dispatch-schemas.ts";
import { webhookIdParams } from "./webhook-schemas.ts";

const logQuery = z.strictObject({
  status: z.enum(DISPATCH_STATUSES).optional().describe("Only dispatches in this status."),
  since: timestampInput.optional().describe("Only events created at or after this time."),
  until: timestampInput.optional().describe("Only events created before this time."),
  eventType: z.string().min(1).max(200).optional().describe("Only events of this type."),
  eventId: z.string().min(1).max(200).optional().describe("Only the delivery of this event (`evt_…`)."),
  resourceId: z.string().min(1).max(200).optional().describe("Only events about this resource (the body's `data.id`)."),
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
      description: "One row per event sent to this webhook, newest first; still readable after the webhook is deleted.",
      tag: "Delivery log",
      params: webhookIdParams,
      query: logQuery,
      responses: { 200: { description: "A page of dispatches.", schema: listOf(dispatchSchema) } },
    },
    async (c, { params, query }) => {
      const database = c.get("database");
      const hook = await findWebhook(database, c.get("principal"), params.id, { support: true, deleted: true });
      await recordAudit(database, c.get("principal"), {
        action: "webhook.log-read",
        target: hook.id,
        account: hook.account,
      });
      const rows = await readNewestFirst(database.db, webhookDispatch, {
        scope: eq(webhookDispatch.webhookId, hook.id),
        filter: and(
          query.status ? eq(webhookDispatch.status, query.status) : undefined,
          query.since ? gte(webhookDispatch.createdAt, new Date(query.since)) : undefined,
          query.until ? lt(webhookDispatch.createdAt, new Date(query.until)) : undefined,
          query.eventType ? eq(webhookDispatch.eventType, query.eventType) : undefined,
          query.eventId ? eq(webhookDispatch.eventId, query.eventId) : undefined,
          // One webhook's rows only (its created index first), so reading each body stays bounded by that log.
          query.resourceId ? sql`(${webhookDispatch.payload})::jsonb #>> '{data,id}' = ${query.resourceId}` : undefined,
        ),
        limit: query.limit,
        cursor: query.cursor,
      });
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
      const database = c.get("database");
      const principal = c.get("principal");
      const { db } = database;
      const [found] = await db
        .select({ row: webhookDispatch, owner: webhook.account })
        .from(webhookDispatch)
        .innerJoin(webhook, eq(webhook.id, webhookDispatch.webhookId))
        .where(dispatchInScope(principal, params.id, { support: true, deleted: true }));
      if (!found) throw notFound("dispatch");
      const { row } = found;
      await recordAudit(database, principal, { action: "dispatch.read", target: row.id, account: found.owner });
      const attempts = await db
        .select()
        .from(webhookAttempt)
        .where(eq(webhookAttempt.dispatchId, row.id))
        .orderBy(asc(webhookAttempt.run), asc(webhookAttempt.attempt));
      // Only an open dispatch can wait for anything.
      const open = row.status === "pending" || row.status === "error";
      const behind = open ? await heldBehind(database, row.id) : null;
      return c.json(presentDispatchDetail(row, attempts, c.get("hooklane").config.brand, behind));
    },
  );
}
