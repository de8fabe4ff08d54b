import { afterCommit } from "../../../lib/api/handler.ts";
import type { OperationRouter } from "../../../lib/api/operation.ts";
import { notFound } from "../../../lib/api/problem.ts";
import { webhook } from "../../../lib/db/schema.ts";
import { webhookInScope } from "../../../lib/webhook/webhook-scope.ts";
import { deleted, deletedSchema } from "./resource-fields.ts";
import { webhookIdParams } from "./webhook-schemas.ts";

/** `DELETE /v3/webhooks/:id`: the webhook goes, with its delivery log and undelivered events. */
export function addWebhookDelete(router: OperationRouter): void {
  router.add(
    {
      method: "delete",
      path: "/v3/webhooks/:id",
      operationId: "deleteWebhook",
      summary: "Delete a webhook",
      description: "Removes the webhook, its delivery log and any event not yet delivered. Pause it to keep them.",
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
      const { subscriptions } = c.var.hooklane;
      const [row] = await c.var.database.db
        .delete(webhook)
        .where(webhookInScope(c.var.principal, params.id))
        .returning({ id: webhook.id });
      if (!row) throw notFound("webhook");
      afterCommit(c, () => subscriptions.invalidate());
      return c.json(deleted("webhook", row.id));
    },
  );
}
