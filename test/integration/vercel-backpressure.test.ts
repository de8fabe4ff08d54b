import { sql } from "drizzle-orm";
import { afterEach, describe, expect, it } from "vitest";
import { DELIVER_TOPIC } from "../../lib/webhook/outbound/webhook-out-queue-registrations.ts";
import { eventually } from "../support/eventually.ts";
import { startHarness, type Harness } from "../support/harness.ts";
import { postgresFactory } from "../support/postgres.ts";
import { peakConcurrency, startReceiver, type TestReceiver } from "../support/receiver.ts";
import type { VercelQueueEmulator } from "../support/vercel-queue-emulator.ts";

const ALICE = { account: "acc_held" };
const MINUTE_MS = 60_000;

/** The queue's work so far: send requests (single and batch), messages it took, and pushes to the lane. */
function queueWork(queue: VercelQueueEmulator) {
  const deliver = queue.messages.filter((m) => m.topic === DELIVER_TOPIC);
  return {
    requests: queue.requests.sends + queue.requests.batches,
    messages: deliver.length,
    pushes: deliver.reduce((n, m) => n + m.pushedAt.length, 0),
  };
}

/**
 * Backpressure on Vercel costs next to nothing while it waits: with the
 * emulated queue and the real SDK, on PostgreSQL, a webhook held back by its
 * cap or by an open circuit breaker does not turn its messages into pushes
 * that come back every second, and the sweep adds none while they wait.
 */
describe("held dispatches on the vercel transport", () => {
  let harness: Harness | undefined;
  let receiver: TestReceiver | undefined;
  afterEach(async () => {
    await harness?.close();
    await receiver?.close();
    harness = receiver = undefined;
  });

  async function publish(h: Harness, url: string, events: number, options: { rateLimit?: number } = {}) {
    await h.accounts(ALICE.account);
    const hook = await h.call("POST", "/v3/webhooks", {
      ...ALICE,
      body: { url, events: ["payment-debt.created"], ...options },
    });
    expect(hook.status).toBe(201);
    for (let i = 0; i < events; i++) {
      const debt = await h.call("POST", "/v3/payment-debts", { ...ALICE, body: { amount: "1.00", currency: "eur" } });
      expect(debt.status).toBe(201);
    }
    await h.settled();
    return hook.body.id as string;
  }

  const statuses = async (h: Harness, webhookId: string) =>
    Object.fromEntries(
      (
        await h.hooklane.database.rows<{ status: string; n: number }>(sql`
          select status, count(*)::int as n from webhook_dispatch where webhook_id = ${webhookId} group by status
        `)
      ).map((r) => [r.status, r.n]),
    ) as Record<string, number>;

  /** Waits until all `events` reached the subscriber and are recorded as delivered; the queue's work then. */
  async function deliveredAll(h: Harness, r: TestReceiver, webhookId: string, events: number) {
    await r.waitFor(events, { timeoutMs: 60_000 });
    await eventually(
      () => statuses(h, webhookId),
      (s) => s.success === events,
      { timeoutMs: 30_000 },
    );
    await h.queue!.drained();
    return queueWork(h.queue!);
  }

  it("delivers 24 events through a cap of 2 to a 1.5 s subscriber with at most 1.2 pushes a delivery", async () => {
    const EVENTS = 24;
    receiver = await startReceiver(() => ({ delayMs: 1_500 }));
    // A 30 s deadline leaves an invocation 15 s to go on with its webhook's next dispatches, then it hands on.
    harness = await startHarness(postgresFactory, {
      driver: "vercel",
      env: { WEBHOOK_MAX_IN_FLIGHT_PER_WEBHOOK: "2", WEBHOOK_TIMEOUT_MS: "30000" },
    });
    const queue = harness.queue!;
    const webhookId = await publish(harness, `${receiver.url}/slow`, EVENTS);

    // Three sweeps while the backlog drains: every held dispatch is carried, none is sent again.
    await receiver.waitFor(4, { timeoutMs: 30_000 });
    const before = queueWork(queue).messages;
    for (let sweep = 0; sweep < 3; sweep++) await harness.sweepReport({ clock: () => queue.now() });
    expect(queueWork(queue).messages).toBe(before);

    const work = await deliveredAll(harness, receiver, webhookId, EVENTS);
    const perDelivery = work.pushes / EVENTS;
    console.info(
      `[backpressure] cap 2, 1.5 s subscriber, ${EVENTS} events: ${work.messages} deliver messages, ` +
        `${work.pushes} pushes (${perDelivery.toFixed(2)} a delivery), peak ${peakConcurrency(receiver.posts)} at the subscriber`,
    );
    expect(receiver.posts).toHaveLength(EVENTS);
    expect(peakConcurrency(receiver.posts)).toBeLessThanOrEqual(2);
    expect(perDelivery).toBeLessThanOrEqual(1.2);
    expect(queue.refusals).toEqual([]);
  }, 120_000);

  it("delivers 20 events to a webhook limited to 4 a second at its rate, with at most 1.5 pushes a delivery", async () => {
    const EVENTS = 20;
    receiver = await startReceiver();
    harness = await startHarness(postgresFactory, { driver: "vercel" });
    const queue = harness.queue!;
    const webhookId = await publish(harness, `${receiver.url}/limited`, EVENTS, { rateLimit: 4 });
    const work = await deliveredAll(harness, receiver, webhookId, EVENTS);
    const times = receiver.posts.map((p) => p.receivedAt).sort((a, b) => a - b);
    const spanMs = times.at(-1)! - times[0]!;
    console.info(
      `[backpressure] rate limit 4/s, ${EVENTS} events: ${work.messages} deliver messages, ${work.pushes} pushes ` +
        `(${(work.pushes / EVENTS).toFixed(2)} a delivery), delivered over ${spanMs} ms`,
    );
    // The bucket holds one token: 20 deliveries at 4 a second take at least 19 / 4 s.
    expect(spanMs).toBeGreaterThanOrEqual(4_500);
    expect(work.pushes / EVENTS).toBeLessThanOrEqual(1.5);
  }, 120_000);

  it("keeps 1,000 dispatches behind a breaker open for 30 minutes at a bounded cost, and delivers them all once it closes", async () => {
    const DISPATCHES = 1_000;
    // The subscriber's port, closed: every attempt is refused until it listens again.
    const down = await startReceiver();
    const port = Number(new URL(down.url).port);
    await down.close();
    harness = await startHarness(postgresFactory, {
      driver: "vercel",
      env: {
        WEBHOOK_BREAKER_THRESHOLD: "5",
        WEBHOOK_BREAKER_OPEN: "5m,30m",
        WEBHOOK_RETRY_SCHEDULE: "10m,10m,10m,10m,10m,10m,10m,10m",
      },
    });
    const h = harness;
    const queue = h.queue!;
    const webhookId = await publish(h, `${down.url}/down`, DISPATCHES);
    await eventually(
      async () => {
        await queue.drained();
        return h.hooklane.database.rows<{ open: boolean; held: number }>(sql`
          select (select breaker_open_until > now() from webhook where id = ${webhookId}) as open,
            (select count(*)::int from webhook_dispatch where webhook_id = ${webhookId}) as held
        `);
      },
      ([row]) => row!.open && row!.held === DISPATCHES,
      { timeoutMs: 60_000 },
    );
    await queue.drained();

    // Thirty minutes, one sweep a minute, the subscriber still down: probes when the breaker lets one through.
    const start = queueWork(queue);
    const counts: number[] = [];
    for (let minute = 1; minute <= 30; minute++) {
      await h.advance(MINUTE_MS);
      await h.sweepReport({ clock: () => queue.now() });
      await queue.drained();
      counts.push(queueWork(queue).messages);
    }
    const during = queueWork(queue);
    const cost = {
      requests: during.requests - start.requests,
      messages: during.messages - start.messages,
      pushes: during.pushes - start.pushes,
    };
    // The first sweeps fall within the breaker's first 5 minutes: they leave the message count unchanged.
    expect(counts.slice(0, 3)).toEqual([start.messages, start.messages, start.messages]);

    // The subscriber is back; the next probe closes the breaker and the backlog drains.
    receiver = await startReceiver(() => ({}), port);
    for (let minute = 0; minute < 15; minute++) {
      const s = await statuses(h, webhookId);
      if ((s.success ?? 0) === DISPATCHES) break;
      await h.advance(MINUTE_MS);
      await h.sweepReport({ clock: () => queue.now() });
      await eventually(
        () => statuses(h, webhookId),
        (now) => (now.success ?? 0) === DISPATCHES || queue.messages.every((m) => m.acknowledged),
        { timeoutMs: 60_000, everyMs: 100 },
      );
    }
    const done = await eventually(
      () => statuses(h, webhookId),
      (s) => s.success === DISPATCHES,
      { timeoutMs: 60_000 },
    );
    await queue.drained();
    const total = queueWork(queue);
    console.info(
      `[backpressure] breaker open 30 min over ${DISPATCHES} due dispatches: ${cost.requests} send requests, ` +
        `${cost.messages} messages, ${cost.pushes} pushes meanwhile; after it closed ` +
        `${total.pushes - during.pushes} pushes for ${DISPATCHES} deliveries; ${JSON.stringify(done)}`,
    );
    expect(done).toEqual({ success: DISPATCHES });
    // A probe's message and its retry's, at most, for each time the breaker let one through.
    expect(cost.pushes).toBeLessThanOrEqual(20);
    expect(cost.requests).toBeLessThanOrEqual(20);
    expect(new Set(receiver.posts.map((p) => p.headers["hooklane-event-id"])).size).toBe(DISPATCHES);
    expect(queue.refusals).toEqual([]);
  }, 300_000);
});
