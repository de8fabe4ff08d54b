import { describe, expect, it } from "vitest";
import { SAMPLE_EVENT_BODY, sampleDeliveryHeaders } from "../../../test/support/sample-delivery.ts";
import { generateWebhookSecret } from "../outbound/webhook-signature.ts";
import { verifyWebhook, WebhookVerificationError, type VerifyWebhookInput } from "./webhook-verify.ts";

const payload = SAMPLE_EVENT_BODY;
const secret = generateWebhookSecret();
const t = 1_700_000_000;
const at = (seconds: number) => seconds * 1_000;

function sign(scheme: "hooklane-v1" | "standard-webhooks", secrets = [secret], timestamp = t, brand = "Hooklane") {
  return sampleDeliveryHeaders({ scheme, secrets, timestamp, brand });
}

async function refusal(input: VerifyWebhookInput): Promise<WebhookVerificationError> {
  const error = await verifyWebhook(input).then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(WebhookVerificationError);
  return error as WebhookVerificationError;
}

describe("verifyWebhook", () => {
  for (const scheme of ["hooklane-v1", "standard-webhooks"] as const) {
    it(`returns the event, the scheme and the timestamp of a ${scheme} delivery`, async () => {
      const verified = await verifyWebhook({ payload, headers: sign(scheme), secret, now: at(t) });
      expect(verified).toEqual({ event: JSON.parse(payload), scheme, timestamp: t });
    });

    it(`accepts a ${scheme} delivery signed during a rotation by either secret, and several secrets of its own`, async () => {
      const previous = generateWebhookSecret();
      const headers = sign(scheme, [generateWebhookSecret(), previous]);
      await expect(verifyWebhook({ payload, headers, secret: previous, now: at(t) })).resolves.toMatchObject({
        scheme,
      });
      const mine = [generateWebhookSecret(), secret];
      await expect(verifyWebhook({ payload, headers: sign(scheme), secret: mine, now: at(t) })).resolves.toBeDefined();
    });

    it(`refuses a ${scheme} delivery with a tampered body or signed with another secret`, async () => {
      const tampered = await refusal({ payload: payload.replace("pd_1", "pd_2"), headers: sign(scheme), secret });
      expect(tampered.reason).toBe("no-matching-signature");
      const other = await refusal({ payload, headers: sign(scheme), secret: generateWebhookSecret(), now: at(t) });
      expect(other.reason).toBe("no-matching-signature");
    });

    it(`holds a ${scheme} timestamp to the tolerance, either way`, async () => {
      const headers = sign(scheme);
      await expect(verifyWebhook({ payload, headers, secret, now: at(t + 300) })).resolves.toBeDefined();
      await expect(verifyWebhook({ payload, headers, secret, now: at(t - 300) })).resolves.toBeDefined();
      for (const now of [at(t + 301), at(t - 301)]) {
        expect((await refusal({ payload, headers, secret, now })).reason).toBe("timestamp-outside-tolerance");
      }
      const wide = { payload, headers, secret, now: at(t + 301), toleranceSeconds: 600 };
      await expect(verifyWebhook(wide)).resolves.toBeDefined();
    });
  }

  it("tells the schemes apart by their headers, so a Standard Webhooks delivery needs no <Brand>-Signature", async () => {
    const headers = sign("standard-webhooks");
    expect(headers["Hooklane-Signature"]).toBeUndefined();
    await expect(verifyWebhook({ payload, headers, secret, now: at(t) })).resolves.toMatchObject({
      scheme: "standard-webhooks",
    });
  });

  it("reads a Headers object or a record in any case, and the body as bytes", async () => {
    const headers = sign("hooklane-v1");
    const bytes = new TextEncoder().encode(payload);
    const lower = Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value]));
    for (const given of [new Headers(headers), lower, headers]) {
      await expect(verifyWebhook({ payload: bytes, headers: given, secret, now: at(t) })).resolves.toBeDefined();
    }
  });

  it("reads <Brand>-Signature for the brand it is given", async () => {
    const headers = sign("hooklane-v1", [secret], t, "Acme");
    await expect(verifyWebhook({ payload, headers, secret, brand: "Acme", now: at(t) })).resolves.toBeDefined();
    expect((await refusal({ payload, headers, secret, now: at(t) })).reason).toBe("missing-headers");
  });

  it("refuses missing and malformed headers", async () => {
    const standard = sign("standard-webhooks");
    expect((await refusal({ payload, headers: {}, secret })).reason).toBe("missing-headers");
    const { "webhook-id": _, ...withoutId } = standard;
    expect((await refusal({ payload, headers: withoutId, secret })).reason).toBe("missing-headers");
    const v1 = sign("hooklane-v1")["Hooklane-Signature"]!.split(",")[1]!;
    const malformed = [
      { "Hooklane-Signature": "" },
      { "Hooklane-Signature": "garbage" },
      { "Hooklane-Signature": `t=${t}` },
      { "Hooklane-Signature": v1 },
      { "Hooklane-Signature": `t=x,${v1}` },
      { "Hooklane-Signature": `t=${t},t=${t},${v1}` },
      { ...standard, "webhook-timestamp": "soon" },
      { ...standard, "webhook-signature": "v2,abc" },
    ];
    for (const headers of malformed) {
      expect((await refusal({ payload, headers, secret, now: at(t) })).reason).toBe("malformed-headers");
    }
    const short = { "Hooklane-Signature": `t=${t},v1=short` };
    expect((await refusal({ payload, headers: short, secret, now: at(t) })).reason).toBe("no-matching-signature");
  });

  it("refuses a genuine signature over a body that is not an event", async () => {
    for (const body of ["not json", "[]", "null", '{"id":"evt_1"}']) {
      const headers = sampleDeliveryHeaders({ scheme: "hooklane-v1", secrets: [secret], timestamp: t, payload: body });
      expect((await refusal({ payload: body, headers, secret, now: at(t) })).reason).toBe("malformed-event");
    }
  });

  it("says why without echoing a signature, the secret or the body", async () => {
    for (const scheme of ["hooklane-v1", "standard-webhooks"] as const) {
      const headers = sign(scheme);
      const signatures = Object.values(headers)
        .join(" ")
        .match(/[0-9a-f]{64}|[A-Za-z0-9+/]{43}=/g)!;
      expect(signatures).toHaveLength(1);
      const error = await refusal({ payload: `${payload} `, headers, secret, now: at(t) });
      const told = `${error.message} ${error.stack} ${JSON.stringify(error)}`;
      for (const hidden of [secret, secret.slice("whsec_".length), "pd_1", ...signatures]) {
        expect(told).not.toContain(hidden);
      }
      expect(error.name).toBe("WebhookVerificationError");
    }
  });

  it("throws a TypeError for a secret that cannot be a key", async () => {
    const headers = sign("standard-webhooks");
    for (const bad of ["", [], "whsec_", "whsec_not base64!"]) {
      await expect(verifyWebhook({ payload, headers, secret: bad, now: at(t) })).rejects.toThrow(TypeError);
    }
  });
});
