import { sql } from "drizzle-orm";
import { afterCommit } from "../../../lib/api/handler.ts";
import type { OperationRouter } from "../../../lib/api/operation.ts";
import { notFound } from "../../../lib/api/problem.ts";
import { recordAudit } from "../../../lib/audit/audit-log.ts";
import { webhook } from "../../../lib/db/schema.ts";
import { skipHeldDispatches } from "../../../lib/db/sql/skip-dispatches.ts";
import { webhookInScope } from "../../../lib/webhook/webhook-scope.ts";
import { deleted, deletedSchema } from "./resource-fields.ts";
import { webhookIdParams } from "./webhook-schemas.ts";

/**
 * `DELETE /v3/webhooks/:id`: the webhook stops hearing events and is never
 * sent to again; its undelivered events are skipped. Its delivery log stays
 * readable (`GET /v3/webhooks/:id/dispatches`) until retention prunes it. One
 * transaction, with the audit record of who deleted it.
 */
export function addWebhookDelete(router: OperationRouter): void {
  router.add(
    {
      method: "delete",
      path: "/v3/webhooks/:id",
      operationId: "deleteWebhook",
      summary: "Delete a webhook",
      description:
        "The webhook hears nothing more and its undelivered events are skipped. Its delivery log stays readable until retention removes it. Pause it instead to keep its events.",
      tag: "Webhooks",
      params: webhookIdParams,
      responses: {
        200: {
          description: "Deleted.",
          schema: deletedSchema("webhook", "DeletedWebhook", "wh_3e8a1f0c9b2d4e7f8a6c5b4d3e2f1a0b"),
        },
      },
    },
    async (c, { params }) => {
      const { subscriptions } = c.get("hooklane");
      const principal = c.get("principal");
      const row = await c.get("database").transaction(async (tx) => {
        const [gone] = await tx.db
          .update(webhook)
          .set({
            deletedAt: sql`now()`,
            deletedBy: principal.sub,
            status: "disabled",
            disabledReason: "deleted",
            statusChangedAt: sql`now()`,
            updatedAt: sql`now()`,
          })
          .where(webhookInScope(principal, params.id))
          .returning({ id: webhook.id, account: webhook.account });
        if (!gone) throw notFound("webhook");
        const skipped = await skipHeldDispatches(tx, { webhookId: gone.id, reason: "webhook deleted" });
        await recordAudit(tx, principal, {
          action: "webhook.deleted",
          target: gone.id,
          account: gone.account,
          detail: { skipped },
        });
        return gone;
      });
      afterCommit(c, () => subscriptions.invalidate());
      return c.json(deleted("webhook", row.id));
    },
  );
}
