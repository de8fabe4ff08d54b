import type { OperationRouter } from "../../../lib/api/operation.ts";
import { notFound } from "../../../lib/api/problem.ts";
import { webhook } from "../../../lib/db/schema.ts";
import { webhookInScope } from "../../../lib/webhook/webhook-scope.ts";
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
      responses: { 204: { description: "Deleted." } },
    },
    async (c, { params }) => {
      const { database, subscriptions } = c.var.hooklane;
      const deleted = await database.db
        .delete(webhook)
        .where(webhookInScope(c.var.principal, params.id))
        .returning({ id: webhook.id });
      if (deleted.length === 0) throw notFound("webhook");
      subscriptions.invalidate();
      return c.body(null, 204);
    },
  );
}
