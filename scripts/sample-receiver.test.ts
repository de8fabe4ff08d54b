import { afterEach, describe, expect, it } from "vitest";
import { buildEventBody } from "../lib/webhook/outbound/webhook-event-body.ts";
import { generateWebhookSecret } from "../lib/webhook/outbound/webhook-signature.ts";
import { SAMPLE_EVENT_BODY, sampleDeliveryHeaders } from "../test/support/sample-delivery.ts";
import type { SignatureScheme } from "../lib/db/schema.ts";
import { startSampleReceiver, type SampleReceiverOptions } from "./sample-receiver.ts";

const payload = SAMPLE_EVENT_BODY;
const data = `data={"object":"payment-debt","id":"pd_1","account":"acc_1"}`;
const secret = generateWebhookSecret();

let close: (() => Promise<void>) | undefined;
afterEach(() => close?.());

/** A running receiver, its printed lines, and a way to wait for the next line that matches. */
async function receiver(options: Omit<SampleReceiverOptions, "log"> = {}) {
  const lines: string[] = [];
  const waiting: { pattern: RegExp; resolve: (line: string) => void }[] = [];
  const log = (line: string) => {
    lines.push(line);
    for (const waiter of waiting.filter(({ pattern }) => pattern.test(line))) waiter.resolve(line);
  };
  const started = await startSampleReceiver({ port: 0, log, ...options });
  close = started.close;
  const printed = (pattern: RegExp) => new Promise<string>((resolve) => waiting.push({ pattern, resolve }));

  async function deliver(delivery: {
    scheme?: SignatureScheme;
    attempt?: number;
    signWith?: string;
    body?: string;
    /** Another body, signed and sent. */
    signed?: string;
    secondsAgo?: number;
  }) {
    const headers = sampleDeliveryHeaders({
      scheme: delivery.scheme ?? "hooklane-v1",
      attempt: delivery.attempt ?? 1,
      ...(delivery.signed ? { payload: delivery.signed } : {}),
      secrets: [delivery.signWith ?? secret],
      timestamp: Math.floor(Date.now() / 1000) - (delivery.secondsAgo ?? 0),
    });
    const response = await fetch(`http://127.0.0.1:${started.port}/hooks/anything`, {
      method: "POST",
      headers: { ...headers, "Content-Type": "application/json" },
      body: delivery.body ?? delivery.signed ?? payload,
    });
    return response.status;
  }
  return { lines, printed, deliver, port: started.port };
}

describe("sample receiver", () => {
  it("says which sequences it has not received when one jumps ahead, and only then", async () => {
    const { lines, deliver } = await receiver({ secret, handleEvent: () => {} });
    const event = (n: number) =>
      buildEventBody({
        id: `evt_${n}`,
        type: "payment-debt.created",
        created: "2026-12-01T00:00:00.000Z",
        livemode: true,
        object: "payment-debt",
        resourceId: `pd_${n}`,
        account: "acc_1",
        sequence: n,
      });
    for (const n of [1, 2, 5, 3, 4]) expect(await deliver({ signed: event(n) })).toBe(200);
    expect(lines).toEqual([
      "✔ evt_1 payment-debt.created #1 attempt 1 (verified hooklane-v1) → 200",
      "✔ evt_2 payment-debt.created #2 attempt 1 (verified hooklane-v1) → 200",
      "✔ evt_5 payment-debt.created #5 attempt 1 (verified hooklane-v1) → 200",
      "  ⚠ #3–#4 not received yet: a retry may bring them, GET /v3/events?webhook=<id>&after=2 has them",
      "✔ evt_3 payment-debt.created #3 attempt 1 (verified hooklane-v1) → 200",
      "✔ evt_4 payment-debt.created #4 attempt 1 (verified hooklane-v1) → 200",
    ]);
  });

  for (const scheme of ["hooklane-v1", "standard-webhooks"] as const) {
    it(`verifies a ${scheme} delivery, acknowledges it and then processes it`, async () => {
      const { lines, printed, deliver } = await receiver({ secret });
      const processed = printed(/^ {2}processed/);
      expect(await deliver({ scheme })).toBe(200);
      await processed;
      expect(lines).toEqual([
        `✔ evt_1 payment-debt.created attempt 1 (verified ${scheme}) → 200`,
        `  processed evt_1 ${data}`,
      ]);
    });
  }

  it("acknowledges a redelivered event as a duplicate and does not process it again", async () => {
    const handled: string[] = [];
    let processedOnce!: () => void;
    const firstProcessed = new Promise<void>((resolve) => (processedOnce = resolve));
    const handleEvent = (event: { id: string }) => {
      handled.push(event.id);
      processedOnce();
    };
    const { lines, deliver } = await receiver({ secret, handleEvent });
    expect(await deliver({ attempt: 1 })).toBe(200);
    await firstProcessed;
    expect(await deliver({ scheme: "standard-webhooks", attempt: 2 })).toBe(200);
    expect(lines).toEqual([
      "✔ evt_1 payment-debt.created attempt 1 (verified hooklane-v1) → 200",
      "↺ duplicate evt_1 payment-debt.created attempt 2 (verified standard-webhooks): already received, acknowledged, not processed again → 200",
    ]);
    expect(handled).toEqual(["evt_1"]);
  });

  it("answers before the event is processed, and prints a failure that comes after", async () => {
    let begin!: () => void;
    const begun = new Promise<void>((resolve) => (begin = resolve));
    let fail!: (error: Error) => void;
    const handleEvent = () => {
      begin();
      return new Promise<void>((_, reject) => (fail = reject));
    };
    const { printed, deliver } = await receiver({ secret, handleEvent });
    // The work has not finished (it cannot before `fail`), yet the sender already has its answer.
    expect(await deliver({})).toBe(200);
    await begun;
    const told = printed(/^✘ processing/);
    fail(new Error("the database is down"));
    expect(await told).toBe("✘ processing evt_1 failed after it was acknowledged: Error: the database is down");
  });

  it("answers 400 and says why when signed with another secret, the body was altered or the signature is old", async () => {
    const { lines, deliver } = await receiver({ secret });
    expect(await deliver({ signWith: generateWebhookSecret() })).toBe(400);
    expect(await deliver({ scheme: "standard-webhooks", body: payload.replace("pd_1", "pd_2") })).toBe(400);
    expect(await deliver({ secondsAgo: 600 })).toBe(400);
    expect(lines).toEqual([
      "✘ rejected attempt 1: no signature matches the body and the secret → 400",
      "✘ rejected attempt 1: no signature matches the body and the secret → 400",
      "✘ rejected attempt 1: the signature is genuine but its timestamp is too far from now (replayed or late) → 400",
    ]);
  });

  it("prints a hint and marks deliveries unverified without a secret", async () => {
    const { lines, printed, deliver } = await receiver();
    const processed = printed(/^ {2}processed/);
    expect(await deliver({})).toBe(200);
    await processed;
    expect(lines).toEqual([
      expect.stringMatching(/WEBHOOK_SECRET is not set/),
      "? evt_1 payment-debt.created attempt 1 (unverified) → 200",
      `  processed evt_1 ${data}`,
    ]);
  });
  it("consents to the sender it expects, and to no other", async () => {
    const { lines, port } = await receiver({ secret });
    const ask = (origin: string) =>
      fetch(`http://127.0.0.1:${port}/hooks`, { method: "OPTIONS", headers: { "webhook-request-origin": origin } });
    const granted = await ask("hooklane");
    expect(granted.status).toBe(200);
    expect(granted.headers.get("webhook-allowed-origin")).toBe("hooklane");
    const refused = await ask("intruder.example");
    expect(refused.status).toBe(403);
    expect(refused.headers.get("webhook-allowed-origin")).toBeNull();
    expect(lines).toEqual([
      "✔ consent given to hooklane → 200",
      "✘ consent asked by intruder.example, not hooklane → 403",
    ]);
  });
});
