import { afterEach, expect, it } from "vitest";
import { createVercelLane } from "../../lib/create-vercel-lane.ts";
import { DELIVER_TOPIC, ROUTE_TOPIC } from "../../lib/webhook/outbound/webhook-out-queue-registrations.ts";
import { LANE_QUEUE, VERCEL_QUEUES } from "../../lib/webhook/transport/vercel/vercel-queue-limits.ts";
import { insertGlobalWebhooks } from "../support/bulk-webhooks.ts";
import { eventually } from "../support/eventually.ts";
import { pgliteFactory, startHarness, type Harness } from "../support/harness.ts";
import { consumeLane } from "../support/vercel-queue-emulator.ts";

const WEBHOOKS = 10_000;
/** The embedded database writes 10,000 rows twice on a shared 2-core machine: give it time. */
const FAN_OUT_TIMEOUT_MS = 300_000;

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
});

it(
  `sends a ${WEBHOOKS.toLocaleString("en")}-webhook fan-out in batches, a bounded number at a time`,
  async () => {
    harness = await startHarness(pgliteFactory, { driver: "vercel", lane: false });
    const queue = harness.queue!;
    // Only the route stage runs: the deliver messages stay in the queue to be counted.
    consumeLane(queue, createVercelLane(harness.hooklane).handler, { topics: [ROUTE_TOPIC] });
    // Network time, so requests that overlap are seen to overlap.
    queue.sendLatencyMs = 5;

    const account = await harness.call("POST", "/v3/accounts", {
      account: "acc_ops",
      admin: true,
      body: { id: "acc_alice", name: "Alice" },
    });
    expect(account.status).toBe(201);
    const first = await harness.call("POST", "/v3/webhooks", {
      account: "acc_ops",
      admin: true,
      body: { url: "https://hooks.example.com/fan-out", events: ["payment-debt.created"], scope: "global" },
    });
    expect(first.status).toBe(201);
    await insertGlobalWebhooks(harness.hooklane, {
      from: 1,
      to: WEBHOOKS,
      events: ["payment-debt.created"],
      url: (i) => `https://hooks.example.com/fan-out/${i}`,
    });

    const debt = await harness.call("POST", "/v3/payment-debts", {
      account: "acc_alice",
      body: { amount: "1.00", currency: "eur" },
    });
    expect(debt.status, JSON.stringify(debt.body)).toBe(201);
    await harness.settled();
    const messages = await eventually(
      async () => queue.messages.filter((m) => m.topic === DELIVER_TOPIC),
      (found) => found.length === WEBHOOKS,
      { timeoutMs: 120_000, everyMs: 250 },
    );
    await queue.drained();

    const batches = Math.ceil(WEBHOOKS / VERCEL_QUEUES.batchSize);
    console.info(
      `[fan-out] ${WEBHOOKS} deliver messages in ${queue.requests.batches} batch requests; ` +
        `peak in flight: ${queue.requests.peakInFlight} requests, ${queue.requests.peakInFlightMessages} messages`,
    );
    expect(new Set(messages.map((m) => m.idempotencyKey)).size).toBe(WEBHOOKS);
    expect(messages.every((m) => m.idempotencyKey!.endsWith(":1:1"))).toBe(true);
    expect(queue.requests.batches).toBe(batches);
    expect(queue.requests.sends).toBe(1); // the route message
    expect(queue.requests.peakInFlight).toBeLessThanOrEqual(LANE_QUEUE.sendConcurrency);
    expect(queue.requests.peakInFlight).toBeGreaterThan(1);
    expect(queue.requests.peakInFlightMessages).toBeLessThanOrEqual(
      LANE_QUEUE.sendConcurrency * VERCEL_QUEUES.batchSize,
    );
    expect(queue.refusals).toEqual([]);
    expect(harness.hooklane.transport.sent).toMatchObject({ deliver: WEBHOOKS, refused: 0 });
  },
  FAN_OUT_TIMEOUT_MS,
);
