import { eq, sql } from "drizzle-orm";
import { webhookDispatch, webhookDispatchOpen } from "../../lib/db/schema.ts";
import type { Harness } from "./harness.ts";

/**
 * A webhook of `account` pointing at `url`, with one test event that has been
 * due for `minutes` minutes (as if no lane had run meanwhile). Resolves to
 * the webhook's and the dispatch's ids.
 */
export async function overdueDispatch(
  harness: Harness,
  options: { account: string; url: string; minutes: number },
): Promise<{ webhookId: string; dispatchId: string }> {
  const { account, url, minutes } = options;
  const created = await harness.call("POST", "/v3/webhooks", { account, body: { url, events: ["*"] } });
  if (created.status !== 201) throw new Error(`POST /v3/webhooks: ${created.status} ${created.text}`);
  const test = await harness.call("POST", `/v3/webhooks/${created.body.id}/test`, { account });
  await harness.hooklane.database.db
    .update(webhookDispatch)
    .set({ nextAttemptAt: sql`now() - ${minutes} * interval '1 minute'` })
    .where(eq(webhookDispatch.id, test.body.id));
  await harness.hooklane.database.db
    .update(webhookDispatchOpen)
    .set({ nextAttemptAt: sql`now() - ${minutes} * interval '1 minute'` })
    .where(eq(webhookDispatchOpen.dispatchId, test.body.id));
  return { webhookId: created.body.id, dispatchId: test.body.id };
}
