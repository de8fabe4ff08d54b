import { describe, expect, it } from "vitest";
import Stripe from "stripe";
import { Webhook } from "standardwebhooks";
import { SAMPLE_EVENT_BODY } from "../../../test/support/sample-delivery.ts";
import { verifyWebhook } from "../verify/webhook-verify.ts";
import { generateWebhookSecret, signatureHeaders } from "./webhook-signature.ts";

const stripe = new Stripe("sk_test_x");
const payload = SAMPLE_EVENT_BODY;
const now = () => Math.floor(Date.now() / 1000);

function sign(scheme: "hooklane-v1" | "standard-webhooks", secrets: string[], timestamp = now()) {
  return signatureHeaders({ scheme, brand: "Hooklane", eventId: "evt_1", attempt: 2, payload, secrets, timestamp });
}

describe("generateWebhookSecret", () => {
  it("is whsec_ plus padded base64 of 32 bytes, different every time", () => {
    const secret = generateWebhookSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(secret.slice(6), "base64")).toHaveLength(32);
    expect(generateWebhookSecret()).not.toBe(secret);
  });
});

describe("hooklane-v1", () => {
  const active = generateWebhookSecret();
  const previous = generateWebhookSecret();

  it("is verified by the stripe SDK", () => {
    const { headers, manifest } = sign("hooklane-v1", [active]);
    expect(headers["Hooklane-Signature"]).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(headers["Hooklane-Event-Id"]).toBe("evt_1");
    expect(headers["Hooklane-Attempt"]).toBe("2");
    expect(manifest).toEqual({ timestamp: expect.any(Number), scheme: "hooklane-v1", signatures: 1 });
    const event = stripe.webhooks.constructEvent(payload, headers["Hooklane-Signature"]!, active);
    expect(event.id).toBe("evt_1");
  });

  it("carries one v1 per secret during rotation, the active one first, each verifiable alone", async () => {
    const { headers, manifest } = sign("hooklane-v1", [active, previous]);
    const header = headers["Hooklane-Signature"]!;
    expect(header).toMatch(/^t=\d+,v1=[0-9a-f]{64},v1=[0-9a-f]{64}$/);
    expect(header.split(",")[1]).toBe(sign("hooklane-v1", [active]).headers["Hooklane-Signature"]!.split(",")[1]);
    expect(manifest.signatures).toBe(2);
    for (const secret of [active, previous]) {
      expect(stripe.webhooks.constructEvent(payload, header, secret).id).toBe("evt_1");
      expect((await verifyWebhook({ payload, headers, secret })).event.id).toBe("evt_1");
    }
    expect(() => stripe.webhooks.constructEvent(payload, header, generateWebhookSecret())).toThrow();
  });

  it("is rejected by the stripe SDK when the body is tampered with", () => {
    const { headers } = sign("hooklane-v1", [active]);
    expect(() =>
      stripe.webhooks.constructEvent(payload.replace("pd_1", "pd_2"), headers["Hooklane-Signature"]!, active),
    ).toThrow(/signature/i);
  });

  it("uses the configured brand as the header prefix", () => {
    const { headers } = signatureHeaders({
      scheme: "hooklane-v1",
      brand: "Acme",
      eventId: "evt_1",
      attempt: 1,
      payload,
      secrets: [active],
      timestamp: now(),
    });
    expect(Object.keys(headers).sort()).toEqual(["Acme-Attempt", "Acme-Event-Id", "Acme-Signature"]);
  });

  it("refuses to sign without a secret", () => {
    expect(() => sign("hooklane-v1", [])).toThrow(/no secret/);
  });
});

describe("standard-webhooks", () => {
  const active = generateWebhookSecret();
  const previous = generateWebhookSecret();

  it("is verified by the standardwebhooks library", () => {
    const { headers, manifest } = sign("standard-webhooks", [active]);
    expect(headers).toMatchObject({ "webhook-id": "evt_1", "Hooklane-Event-Id": "evt_1", "Hooklane-Attempt": "2" });
    expect(headers["webhook-signature"]).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    expect(headers["Hooklane-Signature"]).toBeUndefined();
    expect(manifest).toMatchObject({ scheme: "standard-webhooks", signatures: 1 });
    expect(new Webhook(active).verify(payload, headers)).toMatchObject({ id: "evt_1" });
  });

  it("carries space-separated signatures during rotation, each verifiable alone", async () => {
    const { headers } = sign("standard-webhooks", [active, previous]);
    expect(headers["webhook-signature"]!.split(" ")).toHaveLength(2);
    for (const secret of [active, previous]) {
      expect(new Webhook(secret).verify(payload, headers)).toMatchObject({ id: "evt_1" });
      expect((await verifyWebhook({ payload, headers, secret })).event.id).toBe("evt_1");
    }
    expect(() => new Webhook(generateWebhookSecret()).verify(payload, headers)).toThrow();
  });

  it("is rejected when the body is tampered with", () => {
    const { headers } = sign("standard-webhooks", [active]);
    expect(() => new Webhook(active).verify(payload.replace("pd_1", "pd_2"), headers)).toThrow();
  });
});
