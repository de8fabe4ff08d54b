import { eq } from "drizzle-orm";
import { afterCommit } from "../../../lib/api/handler.ts";
import type { OperationRouter } from "../../../lib/api/operation.ts";
import { ApiError, notFound } from "../../../lib/api/problem.ts";
import { recordAudit } from "../../../lib/audit/audit-log.ts";
import { webhook, webhookDispatch } from "../../../lib/db/schema.ts";
import { restartDispatch } from "../../../lib/db/sql/restart-dispatches.ts";
import { dispatchInScope } from "../../../lib/webhook/webhook-scope.ts";
import { dispatchIdParams, dispatchSchema, presentDispatch } from "./dispatch-schemas.ts";

/**
 * `POST /v3/webhook-dispatches/:id/retry`: starts the dispatch over — a new
 * run from attempt 1, signed with the current secret — and wakes the lane so
 * it is attempted now (once the webhook is active).
 */
export function addWebhookDispatchRetry(router: OperationRouter): void {
  router.add(
    {
      method: "post",
      path: "/v3/webhook-dispatches/:id/retry",
      operationId: "retryWebhookDispatch",
      summary: "Retry a delivery now",
      description:
        "Puts a failed, exhausted or delivered dispatch back to pending with its attempt counter reset, due now.",
      tag: "Delivery log",
      params: dispatchIdParams,
      responses: {
        202: { description: "Queued for delivery now.", schema: dispatchSchema },
        409: { description: "It is already pending, or an attempt is in flight." },
      },
    },
    async (c, { params }) => {
      const { transport } = c.get("hooklane");
      const database = c.get("database");
      const [found] = await database.db
        .select({ id: webhookDispatch.id, owner: webhook.account })
        .from(webhookDispatch)
        .innerJoin(webhook, eq(webhook.id, webhookDispatch.webhookId))
        .where(dispatchInScope(c.get("principal"), params.id, { support: true }));
      if (!found) throw notFound("dispatch");
      if (!(await restartDispatch(database, found.id))) {
        throw new ApiError(409, "Conflict", "The dispatch is already pending or an attempt is in flight.");
      }
      const [row] = await database.db.select().from(webhookDispatch).where(eq(webhookDispatch.id, found.id));
      if (!row) throw notFound("dispatch");
      await recordAudit(database, c.get("principal"), {
        action: "dispatch.retried",
        target: row.id,
        account: found.owner,
        detail: { run: row.run },
      });
      afterCommit(c, () => transport.sendDeliver([row.id]));
      return c.json(presentDispatch(row), 202);
    },
  );
}
