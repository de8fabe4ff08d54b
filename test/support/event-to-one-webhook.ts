import { eq, sql } from "drizzle-orm";
import { webhook, webhookDispatch, webhookDispatchOpen } from "../../lib/db/schema.ts";
import { buildEventBody, newEventId } from "../../lib/webhook/outbound/webhook-event-body.ts";
import type { Harness } from "./harness.ts";

/**
 * A real event (`payment-debt.created`, not a test event) for `webhookId`
 * alone, written as the route stage writes a dispatch, and handed to the
 * lane: what a test of one endpoint's health needs without fanning out to
 * every webhook of the account. Returns the dispatch's id.
 */
export async function eventToOneWebhook(harness: Harness, webhookId: string): Promise<{ id: string }> {
  const db = harness.hooklane.database.db;
  const [hook] = await db.select({ account: webhook.account }).from(webhook).where(eq(webhook.id, webhookId));
  const eventId = newEventId();
  // The webhook's next place in its stream, as routing gives it.
  const [{ last: sequence }] = (await harness.hooklane.database.rows<{ last: number }>(sql`
    insert into webhook_sequence (webhook_id, last) values (${webhookId}, 1)
    on conflict (webhook_id) do update set last = webhook_sequence.last + 1
    returning last::integer as last
  `)) as [{ last: number }];
  const payload = buildEventBody({
    id: eventId,
    type: "payment-debt.created",
    created: new Date().toISOString(),
    livemode: false,
    object: "payment-debt",
    resourceId: `pd_${eventId.slice(4, 20)}`,
    account: hook!.account,
    sequence,
  });
  const [sent] = await db
    .insert(webhookDispatch)
    .values({ eventId, eventType: "payment-debt.created", webhookId, account: hook!.account, sequence, payload })
    .returning();
  await db.insert(webhookDispatchOpen).values({ dispatchId: sent!.id, webhookId, nextAttemptAt: sent!.nextAttemptAt });
  await harness.hooklane.transport.sendDeliver([sent!.id]);
  return { id: sent!.id };
}
