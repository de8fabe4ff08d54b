import { count, eq } from "drizzle-orm";
import { afterEach, describe, expect, it } from "vitest";
import { webhookDispatch, webhookPoisonMessage, webhookRouteJob } from "../../lib/db/schema.ts";
import { DELIVER_TOPIC, ROUTE_TOPIC } from "../../lib/webhook/outbound/webhook-out-queue-registrations.ts";
import { handleRouteMessage } from "../../lib/webhook/outbound/webhook-out-route.handler.ts";
import { eventually } from "../support/eventually.ts";
import type { Harness } from "../support/harness.ts";
import type { Reply } from "../support/receiver.ts";
import { startSubscribedHarness } from "../support/vercel-subscriber.ts";

describe("the vercel transport against the emulated Vercel Queue service", () => {
  const open: Array<{ close(): Promise<void> }> = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((thing) => thing.close()));
  });

  async function setUp(reply?: () => Reply, env: Record<string, string> = {}) {
    const subscribed = await startSubscribedHarness({ ...(reply ? { reply } : {}), env, account: true });
    open.push(subscribed);
    return subscribed;
  }

  const createDebts = async (harness: Harness, n: number) => {
    for (let i = 0; i < n; i++) {
      const response = await harness.call("POST", "/v3/payment-debts", {
        account: "acc_alice",
        body: { amount: i + 1, currency: "eur" },
      });
      expect(response.status).toBe(201);
    }
    await harness.settled();
  };

  const deliverMessagesOf = (harness: Harness, dispatchId: string) =>
    harness.queue!.messages.filter(
      (m) => m.topic === DELIVER_TOPIC && JSON.parse(Buffer.from(m.body).toString()).dispatchId === dispatchId,
    );

  it("keeps events in the PostgreSQL fallback while the queue is down, and delivers every one after", async () => {
    const { harness, receiver } = await setUp();
    await receiver.waitFor(1); // account.updated
    harness.queue!.failSends = true;
    await createDebts(harness, 10);
    const { db } = harness.hooklane.database;
    expect((await db.select({ n: count() }).from(webhookRouteJob))[0]!.n).toBe(10);
    expect(harness.hooklane.transport.sent).toMatchObject({ fallback: 10 });
    expect(await harness.sweep()).toEqual({ routes: 0, dispatches: 0 }); // still down: nothing lost, nothing sent

    harness.queue!.failSends = false;
    expect((await harness.sweep()).routes).toBe(10);
    await receiver.waitFor(11);
    const debts = receiver.posts.map((post) => JSON.parse(post.body)).filter((e) => e.type === "payment-debt.created");
    expect(new Set(debts.map((e) => e.data.id)).size).toBe(10);
    expect((await db.select({ n: count() }).from(webhookRouteJob))[0]!.n).toBe(0);
  });

  it("re-sends dispatches whose deliver message never left", async () => {
    const { harness, receiver, webhookId } = await setUp();
    await receiver.waitFor(1);
    harness.queue!.failSends = true;
    const deps = { database: harness.hooklane.database, transport: harness.hooklane.transport };
    const ids = await handleRouteMessage(deps, {
      eventId: "evt_stranded_0001",
      type: "account.updated",
      resourceId: "acc_alice",
      occurredAt: new Date().toISOString(),
      livemode: true,
    });
    expect(ids.length).toBe(1);
    expect(deliverMessagesOf(harness, ids[0]!)).toEqual([]);
    harness.queue!.failSends = false;
    expect(await harness.sweep()).toEqual({ routes: 0, dispatches: 1 });
    const [post] = await receiver.waitFor(1, { filter: (p) => p.headers["hooklane-event-id"] === "evt_stranded_0001" });
    expect(JSON.parse(post!.body).data.id).toBe("acc_alice");
    const [row] = await harness.hooklane.database.db
      .select()
      .from(webhookDispatch)
      .where(eq(webhookDispatch.id, ids[0]!));
    expect(row!.webhookId).toBe(webhookId);
  });

  it("turns Retry-After: 3600 into a message delayed by at least 3600 s", async () => {
    const { harness, receiver, webhookId } = await setUp(() => ({ status: 503, headers: { "retry-after": "3600" } }));
    await receiver.waitFor(1);
    const [dispatch] = await eventually(
      () => harness.hooklane.database.db.select().from(webhookDispatch).where(eq(webhookDispatch.webhookId, webhookId)),
      (rows) => rows[0]?.attemptCount === 1,
    );
    const messages = await eventually(
      async () => deliverMessagesOf(harness, dispatch!.id),
      (found) => found.length === 2,
    );
    expect(messages.map((m) => m.idempotencyKey)).toEqual([`${dispatch!.id}:1:1`, `${dispatch!.id}:1:2`]);
    expect(messages[1]!.delaySeconds).toBeGreaterThanOrEqual(3_600);
    expect(dispatch!.nextAttemptAt.getTime() - Date.now()).toBeGreaterThan(3_590_000);
  });

  it("sends nothing further for an exhausted dispatch", async () => {
    const { harness, receiver, webhookId } = await setUp(() => ({ status: 500 }), { WEBHOOK_RETRY_SCHEDULE: "100ms" });
    await receiver.waitFor(2);
    const [dispatch] = await eventually(
      () => harness.hooklane.database.db.select().from(webhookDispatch).where(eq(webhookDispatch.webhookId, webhookId)),
      (rows) => rows[0]?.status === "exhausted",
    );
    await harness.queue!.drained();
    expect(await harness.sweep()).toEqual({ routes: 0, dispatches: 0 });
    expect(deliverMessagesOf(harness, dispatch!.id).length).toBe(2);
    expect(receiver.posts.length).toBe(2);
  });

  it("acknowledges and records poison messages on both topics, and keeps consuming", async () => {
    const { harness, receiver } = await setUp();
    const { client } = harness.queue!;
    await client.send(ROUTE_TOPIC, { eventId: 42, type: null });
    await client.send(DELIVER_TOPIC, { dispatchId: "not-a-dispatch" });
    await client.send(ROUTE_TOPIC, { ...validRoute(), type: "no.such.event" });
    await createDebts(harness, 1);
    await receiver.waitFor(2);
    const poison = await eventually(
      () => harness.hooklane.database.db.select().from(webhookPoisonMessage),
      (rows) => rows.length === 3,
    );
    expect(poison.map((p) => p.topic).sort()).toEqual([DELIVER_TOPIC, ROUTE_TOPIC, ROUTE_TOPIC]);
    await harness.queue!.drained();
    // Every message was acknowledged on its first delivery: poison is never retried.
    const pushed = harness.queue!.messages.filter((m) => m.deliveryCount > 0);
    expect(pushed.every((m) => m.acknowledged && m.deliveryCount === 1)).toBe(true);
  });
});

function validRoute() {
  return { eventId: "evt_poison_check_01", resourceId: "x", occurredAt: new Date().toISOString(), livemode: true };
}
