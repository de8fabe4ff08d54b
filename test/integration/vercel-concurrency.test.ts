import { sql } from "drizzle-orm";
import { afterEach, expect, it } from "vitest";
import { DELIVER_TOPIC, ROUTE_TOPIC } from "../../lib/webhook/outbound/webhook-out-queue-registrations.ts";
import { insertGlobalWebhooks } from "../support/bulk-webhooks.ts";
import { eventually } from "../support/eventually.ts";
import { startHarness, type Harness } from "../support/harness.ts";
import { postgresFactory } from "../support/postgres.ts";
import { peakConcurrency, startReceiver, type TestReceiver } from "../support/receiver.ts";

const WEBHOOKS = 10_000;
const DELIVER_SLOTS = 200;

let harness: Harness | undefined;
let receiver: TestReceiver | undefined;
afterEach(async () => {
  await harness?.close();
  await receiver?.close();
});

/**
 * The lane's concurrency is configuration: the build's
 * WEBHOOK_DELIVER_MAX_CONCURRENCY becomes the deliver function's trigger, and
 * routing has a function of its own. A 10,000-delivery fan-out through 200
 * deliver slots, on PostgreSQL with the emulated queue and the real SDK,
 * never has more than 200 deliveries in flight, and an event published
 * meanwhile is routed at once rather than behind them.
 */
it(`delivers a ${WEBHOOKS.toLocaleString("en")}-webhook fan-out through ${DELIVER_SLOTS} deliver slots, routing beside it`, async () => {
  receiver = await startReceiver((post) => (post.path.startsWith("/fan-out") ? { delayMs: 20 } : {}));
  harness = await startHarness(postgresFactory, {
    driver: "vercel",
    env: {
      WEBHOOK_DELIVER_MAX_CONCURRENCY: String(DELIVER_SLOTS),
      // One loopback origin and one (global) owner for all of them: the slots are the bound under test.
      WEBHOOK_MAX_IN_FLIGHT_PER_ORIGIN: "10000",
      WEBHOOK_MAX_IN_FLIGHT_PER_ACCOUNT: "10000",
    },
  });
  const h = harness;
  const r = receiver;
  const queue = h.queue!;
  await h.accounts("acc_alice");
  await insertGlobalWebhooks(h.hooklane, {
    to: WEBHOOKS,
    events: ["payment-debt.created"],
    url: (i) => `${r.url}/fan-out/${i}`,
  });
  const own = await h.call("POST", "/v3/webhooks", {
    account: "acc_alice",
    body: { url: `${r.url}/beside`, events: ["account.updated"] },
  });
  expect(own.status).toBe(201);

  const transactions = async () =>
    Number(
      (
        await h.hooklane.database.rows<{ n: string }>(
          sql`select xact_commit + xact_rollback as n from pg_stat_database where datname = current_database()`,
        )
      )[0]!.n,
    );
  const transactionsBefore = await transactions();
  const debt = await h.call("POST", "/v3/payment-debts", {
    account: "acc_alice",
    body: { amount: "1.00", currency: "eur" },
  });
  expect(debt.status).toBe(201);
  await h.settled();
  // The fan-out is under way: an event published now is routed beside it.
  await r.waitFor(1_000, { timeoutMs: 120_000 });
  const renamed = await h.call("PATCH", "/v3/accounts/acc_alice", {
    account: "acc_ops",
    admin: true,
    body: { name: "Alice" },
  });
  expect(renamed.status).toBe(200);
  await h.settled();
  const [beside] = await r.waitFor(1, { filter: (p) => p.path === "/beside", timeoutMs: 240_000 });

  await r.waitFor(WEBHOOKS + 1, { timeoutMs: 240_000 });
  await eventually(
    async () =>
      (
        await h.hooklane.database.rows<{ n: number }>(
          sql`select count(*)::int as n from webhook_dispatch where status = 'success'`,
        )
      )[0]!.n,
    (n) => n === WEBHOOKS + 1,
    { timeoutMs: 60_000 },
  );
  await queue.drained();
  const perDelivery = (await transactions()) - transactionsBefore;
  const route = queue.messages.filter((m) => m.topic === ROUTE_TOPIC).at(-1)!;
  const routeWaitMs = route.pushedAt[0]! - route.createdAt;
  // The emulator's clock is real time here (nothing advanced it): comparable with the receiver's.
  const owedAtRoute =
    WEBHOOKS - r.posts.filter((p) => p.path.startsWith("/fan-out") && p.receivedAt <= route.pushedAt[0]!).length;
  const peakPushes = queue.peakPushesTo(DELIVER_TOPIC);
  const peakPosts = peakConcurrency(r.posts);
  console.info(
    `[concurrency] ${WEBHOOKS} deliveries through ${DELIVER_SLOTS} deliver slots: peak ${peakPushes} deliver pushes, ` +
      `${peakPosts} POSTs at once; an event published with ${owedAtRoute} deliveries still owed was ` +
      `pushed to the route function ${routeWaitMs} ms after it was sent and delivered ` +
      `${beside!.receivedAt - route.createdAt} ms after; ${(perDelivery / (WEBHOOKS + 1)).toFixed(2)} database ` +
      `transactions a delivery, publishing and routing included`,
  );
  expect(peakPushes).toBeLessThanOrEqual(DELIVER_SLOTS);
  expect(peakPosts).toBeLessThanOrEqual(DELIVER_SLOTS);
  // The slots were used, not just respected.
  expect(peakPushes).toBeGreaterThan(DELIVER_SLOTS / 2);
  // Routed at once: nothing of the fan-out stood in front of it.
  expect(owedAtRoute).toBeGreaterThan(DELIVER_SLOTS);
  expect(routeWaitMs).toBeLessThan(1_000);
}, 420_000);
