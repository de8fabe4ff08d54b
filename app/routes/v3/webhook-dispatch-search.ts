import { and, eq, gte, inArray, lt, sql } from "drizzle-orm";
import { z } from "zod";
import { listOf, listPage, pageQuery, readNewestFirst } from "../../../lib/api/list-page.ts";
import type { OperationRouter } from "../../../lib/api/operation.ts";
import { timestampInput } from "../../../lib/api/timestamps.ts";
import { whenFieldsValid } from "../../../lib/api/validation-errors.ts";
import { recordListRead } from "../../../lib/audit/audit-log.ts";
import { DISPATCH_STATUSES, webhook, webhookDispatch } from "../../../lib/db/schema.ts";
import { webhookScope } from "../../../lib/webhook/webhook-scope.ts";
import { dispatchSchema, presentDispatch } from "./dispatch-schemas.ts";

const searchQuery = z
  .strictObject({
    eventId: z
      .string()
      .min(1)
      .max(100)
      .optional()
      .describe("The event's id (`evt_…`): every webhook's delivery of it."),
    resourceId: z.string().min(1).max(200).optional().describe("The resource the event is about (`data.id`)."),
    type: z.string().min(1).max(200).optional().describe("The event type, e.g. `payment-debt.created`."),
    status: z.enum(DISPATCH_STATUSES).optional().describe("Only dispatches in this status."),
    since: timestampInput.optional().describe("Only events created at or after this time."),
    until: timestampInput.optional().describe("Only events created before this time."),
    ...pageQuery,
  })
  .refine((query) => query.eventId !== undefined || query.resourceId !== undefined || query.type !== undefined, {
    path: ["eventId"],
    message: "give eventId, resourceId or type",
    when: whenFieldsValid,
  })
  .meta({ examples: [{ resourceId: "pd_2f97c4e1a8b34d6e9f0a1b2c3d4e5f6a" }] });

/**
 * `GET /v3/webhook-dispatches?eventId=|resourceId=|type=`: the delivery log
 * searched across every webhook the caller may see (deleted ones included),
 * newest first. Each key is indexed: the event id by the ledger's unique key,
 * the resource id and the type (with the creation time) by their own.
 */
export function addWebhookDispatchSearch(router: OperationRouter): void {
  router.add(
    {
      method: "get",
      path: "/v3/webhook-dispatches",
      operationId: "searchWebhookDispatches",
      summary: "Search deliveries across webhooks",
      description:
        "Dispatches of the caller's webhooks (every account's for support, and each account whose dispatches support found sees a `dispatches.searched` for it) matching an event id, a resource id or an event type, newest first. Deleted webhooks' logs are searched too, until retention removes them.",
      tag: "Delivery log",
      query: searchQuery,
      responses: { 200: { description: "A page of dispatches.", schema: listOf(dispatchSchema) } },
    },
    async (c, { query }) => {
      const database = c.get("database");
      const principal = c.get("principal");
      const scope = webhookScope(principal, { support: true, deleted: true });
      const rows = await readNewestFirst(database.db, webhookDispatch, {
        scope: sql`${webhookDispatch.webhookId} in (select ${webhook.id} from ${webhook} where ${scope})`,
        filter: and(
          query.eventId ? eq(webhookDispatch.eventId, query.eventId) : undefined,
          query.resourceId ? eq(webhookDispatch.resourceId, query.resourceId) : undefined,
          query.type ? eq(webhookDispatch.eventType, query.type) : undefined,
          query.status ? eq(webhookDispatch.status, query.status) : undefined,
          query.since ? gte(webhookDispatch.createdAt, new Date(query.since)) : undefined,
          query.until ? lt(webhookDispatch.createdAt, new Date(query.until)) : undefined,
        ),
        limit: query.limit,
        cursor: query.cursor,
      });
      // Support searching other accounts' deliveries: on the record of each account whose webhooks' dispatches
      // the page showed. Owned, as a single dispatch's read is, by its webhook's account (null for a global one),
      // not by the event's.
      const page = rows.slice(0, query.limit);
      if (principal.support && page.length > 0) {
        const webhookIds = [...new Set(page.map((row) => row.webhookId))];
        const owners = new Map(
          (
            await database.db
              .select({ id: webhook.id, account: webhook.account })
              .from(webhook)
              .where(inArray(webhook.id, webhookIds))
          ).map((owner) => [owner.id, owner.account]),
        );
        await recordListRead(
          database,
          principal,
          {
            action: "dispatches.searched",
            target: query.eventId ?? query.resourceId ?? query.type!,
            detail: {
              eventId: query.eventId,
              resourceId: query.resourceId,
              type: query.type,
              status: query.status,
              since: query.since,
              until: query.until,
            },
          },
          page.map((row) => owners.get(row.webhookId) ?? null),
        );
      }
      return c.json(listPage(rows, query.limit, presentDispatch));
    },
  );
}
