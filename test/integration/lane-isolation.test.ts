import { count, eq, sql } from "drizzle-orm";
import { afterEach, describe, expect, it } from "vitest";
import { webhook, webhookAttempt, webhookDispatch } from "../../lib/db/schema.ts";
import { claimDispatches, forgetInFlight } from "../../lib/db/sql/claim-dispatches.ts";
import { routeAndClaim } from "../../lib/db/sql/route-and-claim.ts";
import { ROUTE_RULES_JSON } from "../../lib/webhook/outbound/webhook-out-route.handler.ts";
import { DELIVER_TOPIC } from "../../lib/webhook/outbound/webhook-out-queue-registrations.ts";
import { eventually } from "../support/eventually.ts";
import { openDispatches } from "../support/open-dispatches.ts";
import { startHarness, type Driver, type Harness } from "../support/harness.ts";
import { postgresFactory } from "../support/postgres.ts";
import { startReceiver, type ReceivedPost, type Reply, type TestReceiver } from "../support/receiver.ts";

const ADMIN = { account: "acc_ops", admin: true };

/**
 * No subscriber can slow, stall or starve another, on real PostgreSQL: what a
 * subscriber answers cannot stop the lane from recording, the deadline is the
 * subscriber's own time, a slow origin holds at most its cap of slots, a dead
 * endpoint is probed instead of hammered, and a rate limit holds.
 */
describe("isolation on the lane", () => {
  const open: Array<{ close(): Promise<void> }> = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((thing) => thing.close()));
  });

  async function setUp(options: { env?: Record<string, string>; driver?: Driver; lane?: boolean } = {}) {
    const harness = await startHarness(postgresFactory, options);
    open.push(harness);
    for (const id of ["acc_alice", "acc_bob"]) {
      const response = await harness.call("POST", "/v3/accounts", { ...ADMIN, body: { id, name: id } });
      expect(response.status).toBe(201);
    }
    return harness;
  }

  async function receiver(reply?: (post: ReceivedPost) => Reply): Promise<TestReceiver> {
    const started = await startReceiver(reply);
    open.push(started);
    return started;
  }

  async function subscribe(harness: Harness, account: string, url: string, events = ["payment-debt.created"]) {
    const response = await harness.call("POST", "/v3/webhooks", { account, body: { url, events } });
    expect(response.status, JSON.stringify(response.body)).toBe(201);
    return response.body.id as string;
  }

  async function createDebts(harness: Harness, account: string, n: number, concurrency = 20) {
    let next = 0;
    await Promise.all(
      Array.from({ length: Math.min(concurrency, n) }, async () => {
        while (next < n) {
          next++;
          const response = await harness.call("POST", "/v3/payment-debts", {
            account,
            body: { amount: "1.00", currency: "eur" },
          });
          expect(response.status).toBe(201);
        }
      }),
    );
    await harness.settled();
  }

  const dispatchCounts = async (harness: Harness, webhookId: string) =>
    Object.fromEntries(
      (
        await harness.hooklane.database.db
          .select({ status: webhookDispatch.status, n: count() })
          .from(webhookDispatch)
          .where(eq(webhookDispatch.webhookId, webhookId))
          .groupBy(webhookDispatch.status)
      ).map((row) => [row.status, row.n]),
    ) as Record<string, number>;

  const attemptsOf = (harness: Harness, webhookId: string) =>
    harness.hooklane.database.db
      .select({ attempt: webhookAttempt })
      .from(webhookAttempt)
      .innerJoin(webhookDispatch, eq(webhookDispatch.id, webhookAttempt.dispatchId))
      .where(eq(webhookDispatch.webhookId, webhookId))
      .then((rows) => rows.map((row) => row.attempt));

  // NUL, invalid UTF-8, a lone surrogate's bytes, other C0 controls and DEL.
  const HOSTILE_BODY = Buffer.concat([
    Buffer.from("bad\u0000body "),
    Buffer.from([0xff, 0xfe, 0xc3, 0x28, 0xed, 0xa0, 0x80, 0x01, 0x02, 0x1b, 0x7f]),
    Buffer.from(" \u0000 end"),
  ]);

  for (const driver of ["postgres", "vercel"] as const) {
    it(`records a subscriber's NUL, invalid UTF-8 and control bytes, and keeps recording everyone else (${driver} transport)`, async () => {
      const harness = await setUp({ driver, env: { WEBHOOK_RETRY_SCHEDULE: "100ms,100ms" } });
      const hostile = await receiver(() => ({ status: 500, body: HOSTILE_BODY }));
      const healthy = await receiver();
      const hostileId = await subscribe(harness, "acc_alice", `${hostile.url}/hook`);
      const healthyId = await subscribe(harness, "acc_bob", `${healthy.url}/hook`);

      await createDebts(harness, "acc_alice", 5);
      await createDebts(harness, "acc_bob", 5);
      await healthy.waitFor(5);

      // Every hostile attempt is recorded (3 per dispatch), its text made safe; the healthy ones succeed.
      const hostileDone = await eventually(
        () => dispatchCounts(harness, hostileId),
        (counts) => counts.exhausted === 5,
      );
      expect(hostileDone).toEqual({ exhausted: 5 });
      expect(
        await eventually(
          () => dispatchCounts(harness, healthyId),
          (c) => c.success === 5,
        ),
      ).toEqual({
        success: 5,
      });
      const attempts = await attemptsOf(harness, hostileId);
      expect(attempts.length).toBe(15);
      expect(hostile.posts.length).toBe(15);
      for (const attempt of attempts) {
        expect(attempt.statusCode).toBe(500);
        expect(attempt.responseExcerpt).toContain("bad\uFFFDbody");
        expect(attempt.responseExcerpt).not.toMatch(/[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F]/);
      }
      if (driver === "vercel") {
        // Each attempt's deliver message was handled once: nothing is redelivered forever.
        // Each deliver message was settled after at most a look or two (one that came a little early
        // waits its remaining time): nothing is redelivered forever.
        // An invocation goes on with its webhook's next due attempt, so a retry's message, delayed until the row is
        // due, may arrive after the attempt was made: it is then acknowledged on its one push.
        const deliveries = await eventually(
          async () => {
            await harness.queue!.drained();
            return harness.queue!.messages.filter((m) => m.topic === DELIVER_TOPIC);
          },
          (found) => found.every((m) => m.acknowledged),
          { timeoutMs: 10_000, everyMs: 100 },
        );
        const counts = deliveries.map((m) => m.deliveryCount);
        console.log(`vercel: ${deliveries.length} deliver messages, delivery counts ${JSON.stringify(counts)}`);
        expect(Math.max(...counts)).toBeLessThanOrEqual(3);
      }
    });
  }

  it("starts the deadline when a socket is free: a 3 s subscriber gets 600 events with no timeout and no abandoned POST", async () => {
    // More deliveries in flight than sockets: before, requests queued for a socket were timed out while waiting.
    const harness = await setUp({
      env: {
        WEBHOOK_TIMEOUT_MS: "10000",
        WEBHOOK_MAX_IN_FLIGHT_PER_WEBHOOK: "100",
        WEBHOOK_MAX_IN_FLIGHT_PER_ORIGIN: "100",
        WEBHOOK_CONNECTIONS_PER_ORIGIN: "50",
        WEBHOOK_RETRY_SCHEDULE: "1s,1s",
      },
    });
    const slow = await receiver(() => ({ delayMs: 3_000 }));
    const slowId = await subscribe(harness, "acc_alice", `${slow.url}/slow`);

    await createDebts(harness, "acc_alice", 600);
    await slow.waitFor(600, { timeoutMs: 150_000 });
    const counts = await eventually(
      () => dispatchCounts(harness, slowId),
      (c) => c.success === 600,
      { timeoutMs: 30_000 },
    );
    expect(counts).toEqual({ success: 600 });
    const attempts = await attemptsOf(harness, slowId);
    expect(attempts.filter((a) => a.errorClass === "timeout").length).toBe(0);
    expect(attempts.length).toBe(600);
    expect(slow.posts.length).toBe(600);
    expect(slow.posts.filter((post) => post.aborted).length).toBe(0);
    const concurrent = peakConcurrency(slow.posts);
    console.log(`3 s subscriber: 600 POSTs, 0 aborted, peak ${concurrent} answered at once (50 sockets)`);
    expect(concurrent).toBeLessThanOrEqual(50);
  }, 240_000);

  it("keeps a slow origin to its cap: another account's event goes through while 200 slow webhooks wait", async () => {
    const harness = await setUp({ env: { WEBHOOK_TIMEOUT_MS: "12000", WEBHOOK_MAX_IN_FLIGHT_PER_ORIGIN: "32" } });
    const SLOW_MS = 9_500;
    const slow = await receiver(() => ({ delayMs: SLOW_MS }));
    const other = await receiver();
    for (let i = 0; i < 200; i++) await subscribe(harness, "acc_alice", `${slow.url}/slow/${i}`);
    await subscribe(harness, "acc_bob", `${other.url}/hook`);

    const started = Date.now();
    await createDebts(harness, "acc_alice", 1); // 200 dispatches to the slow origin
    await createDebts(harness, "acc_bob", 1);
    const [otherPost] = await other.waitFor(1, { timeoutMs: SLOW_MS });
    const answered = slow.posts.filter((post) => post.answeredAt).length;
    console.log(
      `200 webhooks on a 9.5 s origin: the other account's event arrived ${otherPost!.receivedAt - started} ms after ` +
        `the first call; slow requests in flight ${slow.posts.length} (cap 32), answered ${answered}`,
    );
    // It arrived while no slow request had been answered: it never waited behind the slow origin.
    expect(answered).toBe(0);
    expect(slow.posts.length).toBeLessThanOrEqual(32);
  }, 60_000);

  it("keeps a slow webhook to its cap: a healthy webhook on the same origin goes through meanwhile", async () => {
    const harness = await setUp({
      env: {
        WEBHOOK_TIMEOUT_MS: "12000",
        WEBHOOK_MAX_IN_FLIGHT_PER_WEBHOOK: "16",
        WEBHOOK_MAX_IN_FLIGHT_PER_ORIGIN: "32",
      },
    });
    const SLOW_MS = 9_500;
    const shared = await receiver((post) => (post.path === "/slow" ? { delayMs: SLOW_MS } : {}));
    await subscribe(harness, "acc_alice", `${shared.url}/slow`);
    await subscribe(harness, "acc_bob", `${shared.url}/fast`);
    await createDebts(harness, "acc_alice", 100);
    await createDebts(harness, "acc_bob", 20);
    const fast = await shared.waitFor(20, { filter: (post) => post.path === "/fast", timeoutMs: SLOW_MS });
    const slowPosts = shared.posts.filter((post) => post.path === "/slow");
    console.log(
      `same origin: 20 healthy deliveries in ${Math.max(...fast.map((p) => p.receivedAt)) - Math.min(...fast.map((p) => p.receivedAt))} ms ` +
        `while the slow webhook held ${slowPosts.length} requests (cap 16), answered ${slowPosts.filter((p) => p.answeredAt).length}`,
    );
    expect(slowPosts.filter((post) => post.answeredAt).length).toBe(0);
    if (slowPosts.length > 16) {
      // What an overrun looks like, for whoever meets one: each POST (event, attempt, ms after the first, aborted)
      // and the ledger's side of it.
      const first = Math.min(...slowPosts.map((post) => post.receivedAt));
      const posts = slowPosts.map((post) => [
        post.headers["hooklane-event-id"],
        post.headers["hooklane-attempt"],
        post.receivedAt - first,
        post.aborted ?? false,
      ]);
      const ledger = await harness.hooklane.database.rows(sql`
        select d.event_id, d.status, d.attempt_count, o.locked_by, o.locked_until,
          (select json_agg(json_build_object('attempt', a.attempt, 'error', a.error_class, 'startedAt', a.started_at))
           from webhook_attempt a where a.dispatch_id = d.id) as attempts
        from webhook_dispatch d join webhook w on w.id = d.webhook_id
          left join webhook_dispatch_open o on o.dispatch_id = d.id
        where w.url like '%/slow' and (d.attempt_count > 0 or o.locked_by is not null)
      `);
      console.log(`slow webhook over its cap: posts ${JSON.stringify(posts)}; ledger ${JSON.stringify(ledger)}`);
    }
    expect(slowPosts.length).toBeLessThanOrEqual(16);
  }, 60_000);

  it("counts every worker's deliveries in flight from its book row: a slot is free once the attempt is over, before it is recorded, and a dead worker's once its leases run out", async () => {
    const harness = await setUp({ lane: false });
    const webhookId = await subscribe(harness, "acc_alice", "http://127.0.0.1:8080/capped");
    await harness.hooklane.database.db.insert(webhookDispatch).values(
      Array.from({ length: 5 }, (_, i) => ({
        eventId: `evt_settled_${i}`,
        eventType: "payment-debt.created",
        webhookId,
        account: "acc_alice",
        payload: "{}",
      })),
    );
    await openDispatches(harness.hooklane.database);
    const caps = { perWebhook: 2, perOrigin: 100, perAccount: 100 };
    const claim = (workerId: string, held: Record<string, number> = {}, leaseMs = 60_000) =>
      claimDispatches(harness.hooklane.database, { workerId, limit: 10, leaseMs, caps, held }).then((claimed) =>
        claimed.dispatches.map((dispatch) => dispatch.id),
      );
    const book = () =>
      harness.hooklane.database.rows<{ worker: string; by_webhook: Record<string, number> }>(
        // The rows that count: a dead worker's stays until the sweeper forgets it, counting nothing.
        sql`select worker, by_webhook from webhook_lane_in_flight where until > now() order by worker`,
      );
    const first = await claim("w1");
    expect(first).toHaveLength(2);
    expect(await book()).toEqual([{ worker: "w1", by_webhook: { [webhookId]: 2 } }]);
    expect(await claim("w1", { [webhookId]: 2 })).toHaveLength(0);
    // Another worker sees w1's two in flight: nothing for it, whatever it says of its own.
    expect(await claim("w2")).toHaveLength(0);
    // w1's first attempt is over (not recorded yet): one slot is free again, the other still held.
    const next = await claim("w1", { [webhookId]: 1 }, 1_000);
    expect(next).toHaveLength(1);
    expect(first).not.toContain(next[0]);
    expect(await book()).toEqual([{ worker: "w1", by_webhook: { [webhookId]: 2 } }]);
    expect(await claim("w2")).toHaveLength(0);
    // w1 dies: nothing renews its row or its leases (here cut to a second from now), and once they run out w2 has
    // both slots.
    await harness.hooklane.database.rows(
      sql`update webhook_dispatch_open set locked_until = now() + interval '1 second' where locked_by = 'w1'`,
    );
    await harness.hooklane.database.rows(
      sql`update webhook_lane_in_flight set until = now() + interval '1 second' where worker = 'w1'`,
    );
    const taken = await eventually(
      () => claim("w2"),
      (ids) => ids.length === 2,
      { timeoutMs: 10_000 },
    );
    expect(taken).toHaveLength(2);
    expect(await book()).toEqual([{ worker: "w2", by_webhook: { [webhookId]: 2 } }]);
  });

  it("says rows were held back when a claim fills a webhook's room under its cap, so a finished attempt claims again", async () => {
    const harness = await setUp({ lane: false });
    const capped = await subscribe(harness, "acc_alice", "http://127.0.0.1:8080/full");
    const limited = await subscribe(harness, "acc_bob", "http://127.0.0.1:8081/limited");
    await harness.hooklane.database.db.update(webhook).set({ rateLimit: 2 }).where(eq(webhook.id, limited));
    const rows = (webhookId: string, account: string, n: number) =>
      Array.from({ length: n }, (_, i) => ({
        eventId: `evt_full_${webhookId}_${i}`,
        eventType: "payment-debt.created",
        webhookId,
        account,
        payload: "{}",
      }));
    await harness.hooklane.database.db.insert(webhookDispatch).values(rows(capped, "acc_alice", 5));
    await openDispatches(harness.hooklane.database);
    const caps = { perWebhook: 2, perOrigin: 100, perAccount: 100 };
    const finish = (webhookId: string) =>
      harness.hooklane.database.rows(sql`
        with gone as (delete from webhook_dispatch_open where webhook_id = ${webhookId} returning dispatch_id)
        update webhook_dispatch set status = 'success' where id in (select dispatch_id from gone)
      `);
    const claim = (after = "") =>
      claimDispatches(harness.hooklane.database, { workerId: "w1", limit: 10, leaseMs: 60_000, caps, after });
    // The claim takes the webhook's whole room (2 of 5 due) and visits nothing else: three rows wait on the cap.
    const first = await claim();
    expect(first.dispatches).toHaveLength(2);
    expect(first.waitMs).not.toBeNull();
    expect(first.waitMs!).toBeLessThanOrEqual(250);
    // Starting after that webhook (the round-robin cursor), the same.
    await finish(capped);
    await harness.hooklane.database.db
      .insert(webhookDispatch)
      .values(rows(capped, "acc_alice", 5).map((row) => ({ ...row, eventId: `${row.eventId}_b` })));
    await openDispatches(harness.hooklane.database);
    const again = await claim(first.cursor);
    expect(again.dispatches).toHaveLength(2);
    expect(again.waitMs!).toBeLessThanOrEqual(250);

    // A rate limit, not a cap, bounding a turn is no reason to claim again when an attempt finishes.
    await finish(capped);
    await harness.hooklane.database.db.insert(webhookDispatch).values(rows(limited, "acc_bob", 5));
    await openDispatches(harness.hooklane.database);
    const paced = await claim();
    // A bucket of 2/s holds one token: one row now, the next when its token is in (500 ms), not at the cap's recheck.
    expect(paced.dispatches).toHaveLength(1);
    expect(paced.waitMs).not.toBeNull();
    expect(paced.waitMs!).toBeGreaterThan(250);
    expect(paced.waitMs!).toBeLessThanOrEqual(500);
  });

  it("has a step claim the dispatches it routes under the caps and the breaker; a dead worker's run out and another claims them", async () => {
    const harness = await setUp({ lane: false });
    const { database } = harness.hooklane;
    const webhookId = await subscribe(harness, "acc_alice", "http://127.0.0.1:8080/handed");
    await createDebts(harness, "acc_alice", 5); // 5 route jobs in the outbox, nobody routing them
    const caps = { perWebhook: 2, perOrigin: 100, perAccount: 100 };
    const step = (workerId: string, claimLimit: number, leaseMs = 60_000, held: Record<string, number> = {}) =>
      routeAndClaim(database, {
        workerId,
        routeLimit: 100,
        routeLeaseMs: 5_000,
        rulesJson: ROUTE_RULES_JSON,
        claimLimit,
        leaseMs,
        caps,
        after: "",
        held,
      });
    const leases = () =>
      database.rows<{ locked_by: string | null; attempt_count: number }>(sql`
        select o.locked_by, d.attempt_count
        from webhook_dispatch_open o join webhook_dispatch d on d.id = o.dispatch_id
        where o.webhook_id = ${webhookId} order by o.locked_by nulls last
      `);

    // One statement: every job routed and gone, 2 of the 5 new rows leased to w1 (the per-webhook cap), 3 due.
    const first = await step("w1", 100, 1_500);
    expect(first).toMatchObject({ found: 5, routed: [1, 1, 1, 1, 1], dispatches: 5, left: [] });
    expect(first.claim!.dispatches.map((d) => [d.webhookId, d.attempt])).toEqual([
      [webhookId, 1],
      [webhookId, 1],
    ]);
    expect(await database.rows(sql`select 1 from webhook_route_job`)).toEqual([]);
    expect((await leases()).map((row) => row.locked_by)).toEqual(["w1", "w1", null, null, null]);
    // They count against the cap for every worker's claim.
    const claim = (workerId: string) =>
      claimDispatches(database, { workerId, limit: 10, leaseMs: 60_000, caps }).then((c) => c.dispatches);
    expect(await claim("w2")).toEqual([]);

    // A step claims no more than the slots it was given, whatever the caps allow.
    await createDebts(harness, "acc_alice", 3);
    const limited = await routeAndClaim(database, {
      workerId: "w3",
      routeLimit: 100,
      routeLeaseMs: 5_000,
      rulesJson: ROUTE_RULES_JSON,
      claimLimit: 1,
      leaseMs: 60_000,
      caps: { perWebhook: 100, perOrigin: 100, perAccount: 100 },
      after: "",
      held: {},
    });
    expect(limited).toMatchObject({ found: 3, dispatches: 3 });
    expect(limited.claim!.dispatches).toHaveLength(1);
    // w3's attempt is over and recorded, and w3 stops.
    await database.rows(
      sql`update webhook_dispatch_open set locked_until = null, locked_by = null where locked_by = 'w3'`,
    );
    await forgetInFlight(database, "w3");

    // An open breaker: the new row waits, leased to nobody.
    await database.rows(sql`update webhook set breaker_open_until = now() + interval '1 hour' where id = ${webhookId}`);
    await createDebts(harness, "acc_alice", 1);
    const held = await step("w1", 100, 1_500, { [webhookId]: 2 });
    expect(held).toMatchObject({ found: 1, dispatches: 1 });
    expect(held.claim!.dispatches).toEqual([]);
    await database.rows(sql`update webhook set breaker_open_until = null where id = ${webhookId}`);

    // w1 dies before its POSTs: nobody renews its leases, they run out, and w2 claims those rows at attempt 1
    // (the rows never leased are set aside here, so only w1's are due).
    await database.rows(sql`
      update webhook_dispatch_open set next_attempt_at = now() + interval '1 hour'
      where webhook_id = ${webhookId} and locked_by is null
    `);
    const taken = await eventually(
      () => claim("w2"),
      (dispatches) => dispatches.length === 2,
      { timeoutMs: 10_000 },
    );
    expect(taken.map((d) => d.attempt)).toEqual([1, 1]);
    expect(taken.map((d) => d.id).sort()).toEqual(first.claim!.dispatches.map((d) => d.id).sort());
  });

  it("renews a handed-off row's lease while its POST outlasts it: one POST, no deliver claim, no wake-up", async () => {
    const harness = await setUp({ env: { WEBHOOK_LEASE_MS: "1000", WEBHOOK_TIMEOUT_MS: "8000" } });
    const slow = await receiver(() => ({ delayMs: 3_500 }));
    const webhookId = await subscribe(harness, "acc_alice", `${slow.url}/slow`);
    await createDebts(harness, "acc_alice", 1);
    expect(
      await eventually(
        () => dispatchCounts(harness, webhookId),
        (counts) => counts.success === 1,
        { timeoutMs: 15_000 },
      ),
    ).toEqual({ success: 1 });
    // Over three leases long, sent once: the keeper renewed the lease the step that routed it took.
    expect(slow.posts).toHaveLength(1);
    expect(await attemptsOf(harness, webhookId)).toHaveLength(1);
    // The step that routed it claimed it: nothing was sent to wake another claim.
    expect(harness.hooklane.transport.sent.deliver).toBe(0);
  });

  it("probes a dead endpoint instead of hammering it, burns no attempts while open, and delivers all 1,000 once it is back", async () => {
    const harness = await setUp({
      env: {
        WEBHOOK_RETRY_SCHEDULE: "100ms,100ms,100ms,100ms,100ms",
        WEBHOOK_BREAKER_THRESHOLD: "5",
        WEBHOOK_BREAKER_OPEN: "500ms,4s",
        WEBHOOK_TIMEOUT_MS: "2000",
      },
    });
    // A port nobody listens on (yet).
    const probe = await startReceiver();
    const deadUrl = probe.url;
    await probe.close();
    const deadId = await subscribe(harness, "acc_alice", `${deadUrl}/hook`);
    const healthy = await receiver();
    await subscribe(harness, "acc_bob", `${healthy.url}/hook`);

    await createDebts(harness, "acc_alice", 1_000, 50);
    const outageStarted = Date.now();
    await createDebts(harness, "acc_bob", 10);
    await healthy.waitFor(10);

    // Twenty seconds of outage.
    await new Promise((resolve) => setTimeout(resolve, 20_000));
    const attempts = await attemptsOf(harness, deadId);
    const outageMs = Date.now() - outageStarted;
    const perMinute = (attempts.length / outageMs) * 60_000;
    const [state] = await harness.hooklane.database.db
      .select({ failures: webhook.breakerFailures, opens: webhook.breakerOpens })
      .from(webhook)
      .where(eq(webhook.id, deadId));
    const burned = await harness.hooklane.database.rows<{ n: number }>(
      sql`select count(*)::int as n from webhook_dispatch where webhook_id = ${deadId} and attempt_count > 1`,
    );
    console.log(
      `dead endpoint: ${attempts.length} attempts in ${Math.round(outageMs / 1000)} s (${perMinute.toFixed(1)}/min) ` +
        `for 1,000 due dispatches; breaker opened ${state!.opens} times; ${burned[0]!.n} dispatches past attempt 1`,
    );
    expect(attempts.every((a) => a.errorClass === "connection_refused")).toBe(true);
    // The API shows the breaker to the webhook's owner.
    const shown = await harness.call("GET", `/v3/webhooks/${deadId}`, { account: "acc_alice" });
    expect(["open", "half-open"]).toContain(shown.body.breaker.state);
    expect(shown.body.breaker.failures).toBeGreaterThanOrEqual(5);
    // Without the breaker: 1,000 dispatches × 6 attempts in well under a minute.
    expect(attempts.length).toBeLessThan(60);
    expect(await dispatchCounts(harness, deadId)).not.toHaveProperty("exhausted");

    // The endpoint comes back on the same port.
    const { port } = new URL(deadUrl);
    const back = await startReceiver(undefined, Number(port));
    open.push(back);
    await back.waitFor(1_000, { timeoutMs: 60_000 });
    expect(
      await eventually(
        () => dispatchCounts(harness, deadId),
        (c) => c.success === 1_000,
        { timeoutMs: 30_000 },
      ),
    ).toEqual({ success: 1_000 });
  }, 150_000);

  it("holds a webhook to its rate limit, and others are unaffected", async () => {
    const harness = await setUp();
    const limited = await receiver();
    const free = await receiver();
    const limitedId = await subscribe(harness, "acc_alice", `${limited.url}/hook`);
    await subscribe(harness, "acc_bob", `${free.url}/hook`);
    const limit = await harness.call("PATCH", `/v3/webhooks/${limitedId}`, {
      account: "acc_alice",
      body: { rateLimit: 5 },
    });
    expect(limit.status).toBe(200);
    expect(limit.body.rateLimit).toBe(5);

    await createDebts(harness, "acc_alice", 100);
    await createDebts(harness, "acc_bob", 100);
    const freePosts = await free.waitFor(100, { timeoutMs: 20_000 });
    const posts = await limited.waitFor(100, { timeoutMs: 60_000 });
    const times = posts.map((post) => post.receivedAt).sort((a, b) => a - b);
    const spanS = (times.at(-1)! - times[0]!) / 1_000;
    const perSecond = maxInWindow(times, 1_000);
    const freeSpanS =
      (Math.max(...freePosts.map((p) => p.receivedAt)) - Math.min(...freePosts.map((p) => p.receivedAt))) / 1_000;
    console.log(
      `rateLimit 5: 100 deliveries over ${spanS.toFixed(1)} s (${(99 / spanS).toFixed(2)}/s), at most ${perSecond} in any second; ` +
        `the unlimited webhook got its 100 over ${freeSpanS.toFixed(1)} s`,
    );
    expect(99 / spanS).toBeLessThanOrEqual(5.05);
    expect(perSecond).toBeLessThanOrEqual(6);
    expect(
      await eventually(
        () => dispatchCounts(harness, limitedId),
        (c) => c.success === 100,
      ),
    ).toEqual({
      success: 100,
    });
  }, 120_000);
});

/** The most requests being answered at the same time (received, not yet answered). */
function peakConcurrency(posts: readonly ReceivedPost[]): number {
  const events = posts.flatMap((post) => [
    [post.receivedAt, 1],
    [post.answeredAt ?? post.receivedAt, -1],
  ]);
  events.sort((a, b) => a[0]! - b[0]! || a[1]! - b[1]!);
  let current = 0;
  let peak = 0;
  for (const [, delta] of events) peak = Math.max(peak, (current += delta!));
  return peak;
}

/** The most timestamps within any window of `ms` (sorted input). */
function maxInWindow(times: readonly number[], ms: number): number {
  let best = 0;
  for (let start = 0, end = 0; end < times.length; end++) {
    while (times[end]! - times[start]! >= ms) start++;
    best = Math.max(best, end - start + 1);
  }
  return best;
}
