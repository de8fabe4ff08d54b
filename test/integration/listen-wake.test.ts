import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "../../lib/db/client.ts";
import { LISTEN_WAKE_CHANNEL } from "../../lib/db/sql/listen-wake.ts";
import { restartDispatch } from "../../lib/db/sql/restart-dispatches.ts";
import type { ListenDelivery } from "../../lib/webhook/listen/listen-messages.ts";
import { LISTEN } from "../../lib/webhook/listen/listen-session.ts";
import { listenStreamDeps, serveListenStream } from "../../lib/webhook/listen/listen-stream.ts";
import { DELIVER_WAKE_CHANNEL } from "../../lib/webhook/transport/postgres/postgres-transport.ts";
import { HARNESS_START_MS, startHarness, type Harness } from "../support/harness.ts";
import { listenReport } from "../support/listen-stream.ts";
import { postgresFactory } from "../support/postgres.ts";

const ALICE = { account: "acc_listen_wake" };
/** Well inside LISTEN.maxIdleMs: what arrives by then was announced, not found by the safety-net look. */
const ANNOUNCED_MS = LISTEN.maxIdleMs / 2;

/**
 * A listen stream wakes for its own session only: a NOTIFY naming another
 * session or the lane's wake-up costs it nothing, while a dispatch routed,
 * tested or restarted for its session, or a report recorded, reaches it at
 * once. Its statements are counted on the real database handle.
 */
describe("listen streams wake for their own session only, on PostgreSQL", () => {
  let harness: Harness;
  let statements = 0;
  const deliveries: ListenDelivery[] = [];
  const closed = new AbortController();
  let served: Promise<unknown> | undefined;
  let mine: string;
  let other: string;

  beforeAll(async () => {
    harness = await startHarness(postgresFactory, { env: { WEBHOOK_RETRY_SCHEDULE: "100ms" } });
    await harness.accounts(ALICE.account);
    const create = async (sub: string) => {
      const created = await harness.call("POST", "/v3/listen-sessions", {
        ...ALICE,
        sub,
        body: { forwardTo: "http://localhost:4000/hooks", events: ["payment-debt.created"] },
      });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      return created.body.id as string;
    };
    mine = await create("cli-1");
    other = await create("cli-2");
    const { database } = harness.hooklane;
    // The real handle, every statement of the stream counted.
    const counted = new Proxy(database, {
      get(target, key, receiver) {
        const value = Reflect.get(target, key, receiver);
        if (key !== "rows") return value;
        return (...args: Parameters<Database["rows"]>) => (statements++, target.rows(...args));
      },
    });
    served = serveListenStream(
      listenStreamDeps(harness.hooklane, counted, harness.hooklane.logger),
      mine,
      { delivery: async (delivery) => void deliveries.push(delivery), ping: async () => {} },
      closed.signal,
    );
  }, HARNESS_START_MS);
  afterAll(async () => {
    closed.abort();
    await served;
    await harness?.close();
  });

  /** Resolves once every NOTIFY sent before it has reached this process's listener (one session, in order). */
  async function heard(notify: () => Promise<unknown>): Promise<void> {
    const marker = `marker-${Math.random()}`;
    let unlisten: (() => Promise<void>) | undefined;
    const arrived = new Promise<void>((resolve) => {
      void harness.hooklane.database
        .listen(LISTEN_WAKE_CHANNEL, (payload) => payload === marker && resolve())
        .then((stop) => (unlisten = stop));
    });
    await notify();
    await harness.hooklane.database.rows(sql`select pg_notify(${LISTEN_WAKE_CHANNEL}, ${marker})`);
    await arrived;
    await unlisten?.();
  }

  it("is not woken by another session's NOTIFY or the lane's", async () => {
    await expect.poll(() => statements, { timeout: ANNOUNCED_MS }).toBeGreaterThanOrEqual(2);
    // Settled: renewed and looked once, nothing to push.
    await new Promise((settle) => setTimeout(settle, 200));
    const before = statements;
    await heard(async () => {
      for (let i = 0; i < 50; i++) {
        await harness.hooklane.database.rows(sql`select pg_notify(${LISTEN_WAKE_CHANNEL}, ${other})`);
        await harness.hooklane.database.rows(sql`select pg_notify(${DELIVER_WAKE_CHANNEL}, '')`);
      }
    });
    // A woken stream would have run its claim by now; give it the chance anyway.
    await new Promise((settle) => setTimeout(settle, 200));
    console.log(`[listen-wake] 100 NOTIFYs for others → ${statements - before} statements by the idle stream`);
    expect(statements - before).toBe(0);
  });

  it("is woken at once by an event routed to its session, a report, a test event and a restart", async () => {
    const debt = await harness.call("POST", "/v3/payment-debts", {
      ...ALICE,
      body: { amount: "9.00", currency: "EUR" },
    });
    expect(debt.status).toBe(201);
    await expect.poll(() => deliveries.length, { timeout: ANNOUNCED_MS }).toBe(1);
    const first = deliveries[0]!;
    expect(first).toMatchObject({ attempt: 1, event: { type: "payment-debt.created" } });

    // The receiver failed: the retry (100 ms later) follows the report, long before the lease would run out.
    const results = (delivery: ListenDelivery, statusCode: number) =>
      harness.call("POST", `/v3/listen-sessions/${mine}/results`, {
        ...ALICE,
        sub: "cli-1",
        body: { results: [listenReport(delivery, statusCode)] },
      });
    const failed = await results(first, 500);
    expect(failed.body.recorded, JSON.stringify(failed.body)).toEqual([first.dispatch]);
    expect(failed.body.recorded).toEqual([first.dispatch]);
    await expect.poll(() => deliveries.length, { timeout: ANNOUNCED_MS }).toBe(2);
    expect(deliveries[1]).toMatchObject({ dispatch: first.dispatch, attempt: 2 });
    expect((await results(deliveries[1]!, 200)).body.recorded).toEqual([first.dispatch]);

    const test = await harness.call("POST", `/v3/webhooks/${mine}/test`, ALICE);
    expect(test.status, JSON.stringify(test.body)).toBe(202);
    await expect.poll(() => deliveries.length, { timeout: ANNOUNCED_MS }).toBe(3);
    expect(deliveries[2]).toMatchObject({ dispatch: test.body.id, event: { type: "webhook.test" } });

    expect(await restartDispatch(harness.hooklane.database, first.dispatch)).toEqual({ id: first.dispatch });
    await expect.poll(() => deliveries.length, { timeout: ANNOUNCED_MS }).toBe(4);
    expect(deliveries[3]).toMatchObject({ dispatch: first.dispatch, attempt: 1 });
  });
});
