import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { recordPoisonMessage } from "../../lib/db/sql/poison-messages.ts";
import { DELIVER_TOPIC, ROUTE_TOPIC } from "../../lib/webhook/outbound/webhook-out-queue-registrations.ts";
import { HARNESS_START_MS, pgliteFactory, startHarness, type Harness } from "../support/harness.ts";
import { startReceiver, type TestReceiver } from "../support/receiver.ts";

const OWNER = { account: "acc_poisoned" };
const ADMIN = { account: "acc_ops", admin: true, sub: "operator-1" };

describe("poison messages through the API", () => {
  let harness: Harness;
  let receiver: TestReceiver;
  beforeAll(async () => {
    receiver = await startReceiver();
    harness = await startHarness(pgliteFactory, { env: { WEBHOOK_TIMEOUT_MS: "10000" } });
    await harness.accounts(OWNER.account, ADMIN.account);
  }, HARNESS_START_MS);
  afterAll(async () => {
    await harness?.close();
    await receiver?.close();
  });

  it("lists them for admins only and replays a route message, which is then routed and delivered", async () => {
    // The debt is created before anyone listens, so its own event goes nowhere.
    const debt = await harness.call("POST", "/v3/payment-debts", {
      ...OWNER,
      body: { amount: "9.00", currency: "EUR" },
    });
    await harness.settled();
    await harness.call("POST", "/v3/webhooks", {
      ...OWNER,
      body: { url: `${receiver.url}/replayed`, events: ["payment-debt.created"] },
    });
    // As the lane left them: a route message refused while the catalogue did not know its type, and a deliver message.
    const message = {
      eventId: "evt_replayed_000001",
      type: "payment-debt.created",
      resourceId: debt.body.id,
      occurredAt: new Date().toISOString(),
      livemode: true,
    };
    await recordPoisonMessage(
      harness.hooklane.database,
      ROUTE_TOPIC,
      message,
      "unknown event type payment-debt.created",
    );
    await recordPoisonMessage(harness.hooklane.database, DELIVER_TOPIC, { dispatchId: "nope" }, "schema");

    expect((await harness.call("GET", "/v3/poison-messages", OWNER)).status).toBe(403);
    const listed = await harness.call("GET", "/v3/poison-messages", ADMIN);
    expect(listed.status).toBe(200);
    const [deliver, route] = listed.body.data;
    expect(route).toMatchObject({
      object: "poison-message",
      topic: ROUTE_TOPIC,
      event: { id: message.eventId, type: "payment-debt.created", resource: debt.body.id },
      replayable: true,
    });
    expect(deliver).toMatchObject({ topic: DELIVER_TOPIC, replayable: false });

    expect((await harness.call("POST", `/v3/poison-messages/${route.id}/replay`, OWNER)).status).toBe(403);
    expect((await harness.call("POST", `/v3/poison-messages/${deliver.id}/replay`, ADMIN)).status).toBe(409);
    const replayed = await harness.call("POST", `/v3/poison-messages/${route.id}/replay`, ADMIN);
    expect(replayed.status).toBe(202);
    const [post] = await receiver.waitFor(1, { filter: (p) => p.path === "/replayed" });
    expect(JSON.parse(post!.body)).toMatchObject({ id: message.eventId, data: { id: debt.body.id } });

    // It left the list, and the audit log says who replayed it.
    const after = await harness.call("GET", "/v3/poison-messages", ADMIN);
    expect(after.body.data.map((m: { id: string }) => m.id)).toEqual([deliver.id]);
    expect((await harness.call("POST", `/v3/poison-messages/${route.id}/replay`, ADMIN)).status).toBe(404);
    const audit = await harness.call("GET", `/v3/audit-log?target=${route.id}`, ADMIN);
    expect(audit.body.data).toMatchObject([{ action: "poison.replayed", actor: { sub: "operator-1", role: "admin" } }]);
  });
});
