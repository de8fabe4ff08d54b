import { afterCommit } from "../../../lib/api/handler.ts";
import type { OperationRouter } from "../../../lib/api/operation.ts";
import { webhookDispatch } from "../../../lib/db/schema.ts";
import { buildEventBody, newEventId } from "../../../lib/webhook/outbound/webhook-event-body.ts";
import { findWebhook } from "../../../lib/webhook/webhook-scope.ts";
import { dispatchSchema, presentDispatch } from "./dispatch-schemas.ts";
import { webhookIdParams } from "./webhook-schemas.ts";

export const TEST_EVENT_TYPE = "webhook.test";

/**
 * `POST /v3/webhooks/:id/test`: a `webhook.test` event for this webhook only,
 * through the normal lane: a dispatch row, signed, retried and logged like
 * any other. A paused or disabled webhook keeps it until it is active again.
 */
export function addWebhookTestEvent(router: OperationRouter): void {
  router.add(
    {
      method: "post",
      path: "/v3/webhooks/:id/test",
      operationId: "sendWebhookTestEvent",
      summary: "Send a test event",
      description: "Queues a signed `webhook.test` event (`data.object: webhook`) to this webhook alone.",
      tag: "Webhooks",
      params: webhookIdParams,
      responses: { 202: { description: "Queued; follow it in the delivery log.", schema: dispatchSchema } },
    },
    async (c, { params }) => {
      const { config, transport } = c.var.hooklane;
      const { database } = c.var;
      const hook = await findWebhook(database, c.var.principal, params.id);
      const eventId = newEventId();
      const [row] = await database.db
        .insert(webhookDispatch)
        .values({
          eventId,
          eventType: TEST_EVENT_TYPE,
          webhookId: hook.id,
          account: hook.account,
          payload: buildEventBody({
            id: eventId,
            type: TEST_EVENT_TYPE,
            created: new Date().toISOString(),
            livemode: config.livemode,
            object: "webhook",
            resourceId: hook.id,
            account: hook.account,
          }),
        })
        .returning();
      afterCommit(c, () => transport.sendDeliver([row!.id]));
      return c.json(presentDispatch(row!), 202);
    },
  );
}
