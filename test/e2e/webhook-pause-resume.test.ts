import { and, count, eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { webhookDispatch } from "../../lib/db/schema.ts";
import { eventually } from "../support/eventually.ts";
import { HARNESS_START_MS, pgliteFactory, startHarness, type Harness } from "../support/harness.ts";
import { startReceiver, type TestReceiver } from "../support/receiver.ts";

const ALICE = { account: "acc_alice" };
const EVENTS = 100;
describe("pausing and resuming a webhook", () => {
  let harness: Harness;
  let receiver: TestReceiver;
  beforeAll(async () => {
    receiver = await startReceiver();
    harness = await startHarness(pgliteFactory, { env: { WEBHOOK_TIMEOUT_MS: "10000" } });
  }, HARNESS_START_MS);
  afterAll(async () => {
    await harness?.close();
    await receiver?.close();
  });

  const dispatches = (webhookId: string, status: "pending" | "success") =>
    harness.hooklane.database.db
      .select({ n: count() })
      .from(webhookDispatch)
      .where(and(eq(webhookDispatch.webhookId, webhookId), eq(webhookDispatch.status, status)))
      .then(([row]) => row!.n);

  it(`keeps the ${EVENTS} events produced while paused and delivers all of them on resume`, async () => {
    await harness.call("POST", "/v3/accounts", {
      account: "acc_ops",
      admin: true,
      body: { id: "acc_alice", name: "A" },
    });
    const hook = await harness.call("POST", "/v3/webhooks", {
      ...ALICE,
      body: { url: `${receiver.url}/hook`, events: ["payment-debt.created"] },
    });
    const paused = await harness.call("PATCH", `/v3/webhooks/${hook.body.id}`, {
      ...ALICE,
      body: { status: "paused" },
    });
    expect(paused.body.status).toBe("paused");

    for (let i = 0; i < EVENTS; i++) {
      const debt = await harness.call("POST", "/v3/payment-debts", {
        ...ALICE,
        body: { amount: i + 1, currency: "eur" },
      });
      expect(debt.status).toBe(201);
    }
    await harness.settled();
    // Routed into the ledger and held there: nothing is sent while paused.
    await eventually(
      () => dispatches(hook.body.id, "pending"),
      (n) => n === EVENTS,
    );
    expect(receiver.posts.length).toBe(0);

    const resumed = await harness.call("PATCH", `/v3/webhooks/${hook.body.id}`, {
      ...ALICE,
      body: { status: "active" },
    });
    expect(resumed.body.status).toBe("active");
    // At least once: a slow answer may be retried, so count events, not POSTs.
    const eventIds = () => new Set(receiver.posts.map((post) => JSON.parse(post.body).id as string));
    await eventually(
      async () => eventIds().size,
      (n) => n === EVENTS,
    );
    expect(receiver.posts.every((post) => JSON.parse(post.body).type === "payment-debt.created")).toBe(true);
    await eventually(
      () => dispatches(hook.body.id, "success"),
      (n) => n === EVENTS,
    );
    expect(eventIds().size).toBe(EVENTS);
  });

  it("never lets a caller set disabled, nor send an empty change", async () => {
    const hook = await harness.call("POST", "/v3/webhooks", {
      ...ALICE,
      body: { url: `${receiver.url}/x`, events: ["*"] },
    });
    const refused = await harness.call("PATCH", `/v3/webhooks/${hook.body.id}`, {
      ...ALICE,
      body: { status: "disabled" },
    });
    expect(refused.status).toBe(422);
    expect(refused.body.errors[0].field).toBe("status");
    const empty = await harness.call("PATCH", `/v3/webhooks/${hook.body.id}`, { ...ALICE, body: {} });
    expect(empty.status).toBe(422);
  });
});
