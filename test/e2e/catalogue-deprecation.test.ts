import { and, count, eq } from "drizzle-orm";
import { afterEach, describe, expect, it } from "vitest";
import { webhookDispatch, webhookEventType, webhookRouteJob } from "../../lib/db/schema.ts";
import { applyCatalogueSync } from "../../lib/webhook/catalogue/catalogue-sync.ts";
import { formatRefusal } from "../../lib/webhook/catalogue/catalogue-sync-report.ts";
import { CATALOGUE } from "../../lib/webhook/catalogue/webhook-event-catalogue.ts";
import { eventually } from "../support/eventually.ts";
import { pgliteFactory, startHarness } from "../support/harness.ts";
import { startReceiver, type ReceivedPost } from "../support/receiver.ts";

const ADMIN = { account: "acc_ops", admin: true };
const ALICE = { account: "acc_alice" };
const ofType = (type: string) => (post: ReceivedPost) => JSON.parse(post.body).type === type;

describe("removing an event from the catalogue while a webhook subscribes to it", () => {
  const open: Array<{ close(): Promise<void> }> = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((thing) => thing.close()));
  });

  it("is refused naming the webhook; forced, it deprecates the event and the webhook stops receiving it", async () => {
    const receiver = await startReceiver();
    const harness = await startHarness(pgliteFactory);
    open.push(harness, receiver);
    const { database } = harness.hooklane;

    await harness.call("POST", "/v3/accounts", { ...ADMIN, body: { id: "acc_alice", name: "Alice" } });
    const hook = await harness.call("POST", "/v3/webhooks", {
      ...ALICE,
      body: { url: `${receiver.url}/hook`, events: ["payment-debt.created", "payment-debt.updated"] },
    });
    expect(hook.status, JSON.stringify(hook.body)).toBe(201);
    const createDebt = async () =>
      (await harness.call("POST", "/v3/payment-debts", { ...ALICE, body: { amount: "9.99", currency: "eur" } })).body;
    await createDebt();
    await receiver.waitFor(1, { filter: ofType("payment-debt.created") });

    const withoutCreated = CATALOGUE.filter((entry) => entry.internal !== "payment-debt.created");
    const refused = await applyCatalogueSync(database, withoutCreated);
    expect(refused.outcome).toBe("refused");
    expect(formatRefusal(refused.plan)).toEqual([
      `refusing to deprecate payment-debt.created: still subscribed by 1 webhook: ${hook.body.id} (account acc_alice, active)`,
    ]);
    const [typeRow] = await database.db
      .select()
      .from(webhookEventType)
      .where(eq(webhookEventType.internal, "payment-debt.created"));
    expect(typeRow?.deprecated).toBe(false);

    expect((await applyCatalogueSync(database, withoutCreated, { force: true })).outcome).toBe("applied");

    // The API's subscribed set may be up to 30 s old and still publish the event: the route stage drops it.
    const debt = await createDebt();
    await harness.call("PATCH", `/v3/payment-debts/${debt.id}`, { ...ALICE, body: { status: "paid" } });
    await receiver.waitFor(1, { filter: ofType("payment-debt.updated") });
    await harness.settled();
    expect(harness.hooklane.publisher.stats.published).toBe(3);
    await eventually(
      async () => (await database.db.select({ n: count() }).from(webhookRouteJob))[0]!.n,
      (n) => n === 0,
    );
    const createdDispatches = await database.db
      .select({ n: count() })
      .from(webhookDispatch)
      .where(and(eq(webhookDispatch.webhookId, hook.body.id), eq(webhookDispatch.eventType, "payment-debt.created")));
    expect(createdDispatches[0]!.n).toBe(1);
    expect(receiver.posts.filter(ofType("payment-debt.created"))).toHaveLength(1);

    // Once the set refreshes, the publisher stops sending it at all; the other event is still heard.
    harness.hooklane.subscriptions.invalidate();
    expect(await harness.hooklane.subscriptions.has("payment-debt.created")).toBe(false);
    expect(await harness.hooklane.subscriptions.has("payment-debt.updated")).toBe(true);
  });
});
