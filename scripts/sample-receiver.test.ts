import { afterEach, describe, expect, it } from "vitest";
import { generateWebhookSecret, signatureHeaders } from "../lib/webhook/outbound/webhook-signature.ts";
import { startSampleReceiver } from "./sample-receiver.ts";

const payload = JSON.stringify({
  id: "evt_1",
  type: "payment-debt.created",
  created: "2025-01-01T00:00:00.000Z",
  livemode: true,
  data: { object: "payment-debt", id: "pd_1", account: "acc_1" },
});
const secret = generateWebhookSecret();

let close: (() => Promise<void>) | undefined;
afterEach(() => close?.());

async function deliver(options: { secret?: string; signWith?: string; body?: string }) {
  const lines: string[] = [];
  const receiver = await startSampleReceiver({ port: 0, secret: options.secret, log: (line) => lines.push(line) });
  close = receiver.close;
  const { headers } = signatureHeaders({
    scheme: "hooklane-v1",
    brand: "Hooklane",
    eventId: "evt_1",
    attempt: 1,
    payload,
    secrets: [options.signWith ?? secret],
    timestamp: Math.floor(Date.now() / 1000),
  });
  const response = await fetch(`http://127.0.0.1:${receiver.port}/hooks/anything`, {
    method: "POST",
    headers: { ...headers, "Content-Type": "application/json" },
    body: options.body ?? payload,
  });
  return { status: response.status, lines };
}

describe("sample receiver", () => {
  it("verifies a signed delivery and prints it", async () => {
    const { status, lines } = await deliver({ secret });
    expect(status).toBe(200);
    expect(lines).toEqual([
      `✔ verified evt_1 payment-debt.created attempt 1 data={"object":"payment-debt","id":"pd_1","account":"acc_1"}`,
    ]);
  });

  it("answers 400 when signed with another secret or the body was altered", async () => {
    const other = await deliver({ secret, signWith: generateWebhookSecret() });
    expect(other.status).toBe(400);
    expect(other.lines[0]).toMatch(/^✘ signature mismatch evt_1 payment-debt.created attempt 1/);
    await close?.();
    const altered = await deliver({ secret, body: payload.replace("pd_1", "pd_2") });
    expect(altered.status).toBe(400);
  });

  it("prints a hint and marks deliveries unverified without a secret", async () => {
    const { status, lines } = await deliver({});
    expect(status).toBe(200);
    expect(lines[0]).toMatch(/WEBHOOK_SECRET is not set/);
    expect(lines[1]).toMatch(/^\? unverified evt_1 payment-debt.created attempt 1 data=/);
  });
});
