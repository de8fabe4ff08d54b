import { eq, sql } from "drizzle-orm";
import { Webhook as StandardWebhook } from "standardwebhooks";
import Stripe from "stripe";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { webhook } from "../../lib/db/schema.ts";
import { HARNESS_START_MS, pgliteFactory, startHarness, type Harness } from "../support/harness.ts";
import { startReceiver, type TestReceiver } from "../support/receiver.ts";

const stripe = new Stripe("sk_test_hooklane");
const ALICE = { account: "acc_alice" };
describe("secret rotation and signature schemes, through the control plane", () => {
  let harness: Harness;
  let receiver: TestReceiver;
  beforeAll(async () => {
    receiver = await startReceiver();
    harness = await startHarness(pgliteFactory, { env: { WEBHOOK_TIMEOUT_MS: "10000" } });
    await harness.accounts(ALICE.account);
  }, HARNESS_START_MS);
  afterAll(async () => {
    await harness?.close();
    await receiver?.close();
  });

  /** Sends a `webhook.test` event through the lane and returns the POST that arrived. */
  async function sendTest(id: string) {
    const before = receiver.posts.length;
    const queued = await harness.call("POST", `/v3/webhooks/${id}/test`, ALICE);
    expect(queued.status, JSON.stringify(queued.body)).toBe(202);
    expect(queued.body.event.type).toBe("webhook.test");
    const posts = await receiver.waitFor(before + 1);
    return posts[before]!;
  }

  it("signs with both secrets for 24 h after a rotation, then with the new one only (stripe SDK)", async () => {
    const created = await harness.call("POST", "/v3/webhooks", {
      ...ALICE,
      body: { url: `${receiver.url}/v1`, events: ["*"] },
    });
    const oldSecret: string = created.body.secret;
    const id: string = created.body.id;

    const rotated = await harness.call("POST", `/v3/webhooks/${id}/rotate-secret`, ALICE);
    expect(rotated.status).toBe(200);
    const newSecret: string = rotated.body.secret;
    expect(newSecret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(newSecret).not.toBe(oldSecret);
    const overlapMs = Date.parse(rotated.body.previousSecretExpires) - Date.now();
    expect(overlapMs).toBeGreaterThan(24 * 3_600_000 - 60_000);
    expect(overlapMs).toBeLessThanOrEqual(24 * 3_600_000);
    // Shown once: reads never carry a secret.
    expect((await harness.call("GET", `/v3/webhooks/${id}`, ALICE)).body).not.toHaveProperty("secret");

    const during = await sendTest(id);
    const header = String(during.headers["hooklane-signature"]);
    expect(header).toMatch(/^t=\d+,v1=[0-9a-f]{64},v1=[0-9a-f]{64}$/);
    for (const secret of [newSecret, oldSecret]) {
      expect(stripe.webhooks.constructEvent(during.body, header, secret).type).toBe("webhook.test");
    }

    // The overlap ends: let the previous secret's 24 h run out.
    await harness.hooklane.database.db
      .update(webhook)
      .set({ previousSecretExpiresAt: sql`now() - interval '1 second'` })
      .where(eq(webhook.id, id));
    const after = await sendTest(id);
    const single = String(after.headers["hooklane-signature"]);
    expect(single).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(stripe.webhooks.constructEvent(after.body, single, newSecret).id).toBe(after.headers["hooklane-event-id"]);
    expect(() => stripe.webhooks.constructEvent(after.body, single, oldSecret)).toThrow();
    expect((await harness.call("GET", `/v3/webhooks/${id}`, ALICE)).body.previousSecretExpires).toBeNull();
  });

  it("signs a standard-webhooks webhook so the standardwebhooks library verifies it, before and during a rotation", async () => {
    const created = await harness.call("POST", "/v3/webhooks", {
      ...ALICE,
      body: { url: `${receiver.url}/sw`, events: ["*"], scheme: "standard-webhooks" },
    });
    expect(created.body.scheme).toBe("standard-webhooks");
    const first = await sendTest(created.body.id);
    const verified = new StandardWebhook(created.body.secret).verify(
      first.body,
      first.headers as Record<string, string>,
    );
    expect(verified).toMatchObject({ type: "webhook.test", data: { object: "webhook", id: created.body.id } });

    const rotated = await harness.call("POST", `/v3/webhooks/${created.body.id}/rotate-secret`, ALICE);
    const second = await sendTest(created.body.id);
    expect(String(second.headers["webhook-signature"]).split(" ")).toHaveLength(2);
    for (const secret of [rotated.body.secret, created.body.secret]) {
      expect(new StandardWebhook(secret).verify(second.body, second.headers as Record<string, string>)).toMatchObject({
        type: "webhook.test",
      });
    }
  });
});
