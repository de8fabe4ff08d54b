import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LISTEN_WAKE_CHANNEL } from "../../lib/db/sql/listen-wake.ts";
import { ROUTE_WAKE_CHANNEL } from "../../lib/db/sql/route-jobs.ts";
import { SWEEP_WAKE_CHANNEL } from "../../lib/webhook/sweeper/wake-sweepers.ts";
import { DELIVER_WAKE_CHANNEL } from "../../lib/webhook/transport/postgres/postgres-transport.ts";
import { HARNESS_START_MS, startHarness, type Harness } from "../support/harness.ts";
import { postgresFactory } from "../support/postgres.ts";
import { startReceiver, type TestReceiver } from "../support/receiver.ts";

const CHANNELS = [ROUTE_WAKE_CHANNEL, DELIVER_WAKE_CHANNEL, SWEEP_WAKE_CHANNEL, LISTEN_WAKE_CHANNEL];
const ALICE = { account: "acc_vercel_quiet" };
const EVENTS = 20;

/**
 * On Vercel nobody LISTENs (the lane is a queue-triggered function, the
 * sweeper a cron), and a NOTIFY serialises every commit that sends one: the
 * Vercel transport sends none. Counted on a LISTEN session of the test's own
 * on every channel the product has, over publishing, routing, delivering, a
 * 410 that disables a webhook, and a recovery.
 */
describe("the vercel transport sends no NOTIFY, on PostgreSQL", () => {
  let harness: Harness;
  let receiver: TestReceiver;
  let listener: pg.Client;
  const heard: Array<{ channel: string; payload: string | undefined }> = [];

  beforeAll(async () => {
    receiver = await startReceiver((post) => (post.path.startsWith("/gone") ? { status: 410 } : {}));
    harness = await startHarness(postgresFactory, { driver: "vercel" });
    await harness.accounts(ALICE.account);
    const { databaseUrl } = harness.hooklane.config;
    listener = new pg.Client({ connectionString: databaseUrl });
    await listener.connect();
    listener.on("notification", (message) => heard.push({ channel: message.channel, payload: message.payload }));
    for (const channel of CHANNELS) await listener.query(`listen "${channel}"`);
  }, HARNESS_START_MS);
  afterAll(async () => {
    await listener?.end();
    await harness?.close();
    await receiver?.close();
  });

  it(`publishes, routes and delivers ${EVENTS} events, disables a webhook on 410 and runs a recovery with 0 NOTIFYs`, async () => {
    const hook = await harness.call("POST", "/v3/webhooks", {
      ...ALICE,
      body: { url: `${receiver.url}/hook`, events: ["payment-debt.created"] },
    });
    expect(hook.status, hook.text).toBe(201);
    const gone = await harness.call("POST", "/v3/webhooks", {
      ...ALICE,
      body: { url: `${receiver.url}/gone`, events: ["payment-debt.created"] },
    });
    expect(gone.status, gone.text).toBe(201);
    for (let i = 0; i < EVENTS; i++) {
      const debt = await harness.call("POST", "/v3/payment-debts", {
        ...ALICE,
        body: { amount: "9.00", currency: "EUR" },
      });
      expect(debt.status).toBe(201);
    }
    await receiver.waitFor(EVENTS, { filter: (post) => post.path.startsWith("/hook"), timeoutMs: 60_000 });
    await receiver.waitFor(1, { filter: (post) => post.path.startsWith("/gone"), timeoutMs: 60_000 });
    await expect
      .poll(async () => (await harness.call("GET", `/v3/webhooks/${gone.body.id}`, ALICE)).body.status, {
        timeout: 30_000,
      })
      .toBe("disabled");
    const recovery = await harness.call("POST", `/v3/webhooks/${hook.body.id}/recover`, {
      ...ALICE,
      body: { since: new Date(Date.now() - 3_600_000).toISOString() },
    });
    expect(recovery.status, recovery.text).toBe(202);
    await harness.sweep();
    await harness.settled();

    // Everything NOTIFY'd before this marker has reached the listener by the time it does.
    await listener.query("select pg_notify($1, 'marker')", [ROUTE_WAKE_CHANNEL]);
    await expect.poll(() => heard.some((n) => n.payload === "marker"), { timeout: 10_000 }).toBe(true);
    const fromProduct = heard.filter((n) => n.payload !== "marker");
    console.log(`[vercel-no-notify] ${receiver.posts.length} POSTs, ${fromProduct.length} NOTIFYs from the product`);
    expect(fromProduct).toEqual([]);
  });
});
