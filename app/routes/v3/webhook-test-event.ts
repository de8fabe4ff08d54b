import { recordAudit } from "../../../lib/audit/audit-log.ts";
import { afterCommit } from "../../../lib/api/handler.ts";
import { z } from "zod";
import type { OperationRouter } from "../../../lib/api/operation.ts";
import { TEST_EVENT_TYPE, TEST_MODES, webhookDispatch, webhookDispatchOpen } from "../../../lib/db/schema.ts";
import { notifyListenSession } from "../../../lib/db/sql/listen-wake.ts";
import { buildEventBody, newEventId } from "../../../lib/webhook/outbound/webhook-event-body.ts";
import { LATE_TEST_EVENT_SECONDS } from "../../../lib/webhook/outbound/webhook-out-deliver.handler.ts";
import { findWebhook } from "../../../lib/webhook/webhook-scope.ts";
import { accountQuotas } from "./account-quotas.ts";
import { dispatchSchema, presentDispatch } from "./dispatch-schemas.ts";
import { webhookIdParams } from "./webhook-schemas.ts";

// Strict: the event type is fixed, and asking for another one is refused, never ignored.
const testEventBody = z
  .strictObject({
    mode: z
      .enum(["normal", ...TEST_MODES])
      .default("normal")
      .describe(
        `\`normal\`; \`duplicate\`: the same event (id and body) POSTed twice; \`late\`: signed with a timestamp ${LATE_TEST_EVENT_SECONDS} s old, beyond the 300 s tolerance; \`bad-signature\`: signed with a secret that is not the webhook's. Test events only.`,
      ),
  })
  .meta({ examples: [{ mode: "duplicate" }] });

/**
 * `POST /v3/webhooks/:id/test`: a `webhook.test` event for this webhook only,
 * through the normal lane: a dispatch row, signed, retried and logged like
 * any other. A paused or disabled webhook keeps it until it is active again.
 * `mode` exercises the receiver's rejection and dedupe paths; it exists for
 * this event type only (the database refuses it on any other).
 */
export function addWebhookTestEvent(router: OperationRouter): void {
  router.add(
    {
      method: "post",
      path: "/v3/webhooks/:id/test",
      operationId: "sendWebhookTestEvent",
      summary: "Send a test event",
      description:
        "Queues a signed `webhook.test` event (`data.object: webhook`) to this webhook alone, optionally sent in a test mode.",
      tag: "Webhooks",
      params: webhookIdParams,
      body: testEventBody,
      bodyOptional: true,
      responses: {
        202: { description: "Queued; follow it in the delivery log.", schema: dispatchSchema },
        429: { description: "The account's hourly test-event quota is used up; `Retry-After` says when." },
      },
    },
    async (c, { params, body }) => {
      const { config, transport } = c.get("hooklane");
      const database = c.get("database");
      const hook = await findWebhook(database, c.get("principal"), params.id);
      const eventId = newEventId();
      const payload = buildEventBody({
        id: eventId,
        type: TEST_EVENT_TYPE,
        created: new Date().toISOString(),
        livemode: config.livemode,
        object: "webhook",
        resourceId: hook.id,
        account: hook.account,
      });
      const row = await accountQuotas.testEvent(c, hook.account, async (tx) => {
        const [sent] = await tx.db
          .insert(webhookDispatch)
          .values({
            eventId,
            eventType: TEST_EVENT_TYPE,
            testMode: body.mode === "normal" ? null : body.mode,
            webhookId: hook.id,
            account: hook.account,
            payload,
          })
          .returning();
        // Open: due now, for the lane's claims.
        await tx.db
          .insert(webhookDispatchOpen)
          .values({ dispatchId: sent!.id, webhookId: hook.id, nextAttemptAt: sent!.nextAttemptAt });
        if (hook.status === "listening") await notifyListenSession(tx, hook.id);
        await recordAudit(tx, c.get("principal"), {
          action: "webhook.test-sent",
          target: hook.id,
          account: hook.account,
          detail: { dispatch: sent!.id, mode: body.mode },
        });
        return sent!;
      });
      afterCommit(c, () => transport.sendDeliver([row.id]));
      return c.json(presentDispatch(row), 202);
    },
  );
}
