import { sql } from "drizzle-orm";
import { afterEach, describe, expect, it } from "vitest";
import { ROUTE_TOPIC } from "../../lib/webhook/outbound/webhook-out-queue-registrations.ts";
import { eventually } from "../support/eventually.ts";
import { startHarness, type Harness } from "../support/harness.ts";
import { postgresFactory } from "../support/postgres.ts";
import { startReceiver, type TestReceiver } from "../support/receiver.ts";

const ALICE = { account: "acc_outbox" };
const MINUTE_MS = 60_000;

/**
 * On Vercel the outbox row is the event until it is routed: the row stays
 * until the route stage has written the event's dispatches, a route message
 * that fails until its retention ends is recorded as poison, and the event
 * is still routed, from its row, once the fault is gone. Real PostgreSQL,
 * the emulated queue and the real SDK.
 */
describe("route messages on the vercel transport are never lost", () => {
  let harness: Harness | undefined;
  let receiver: TestReceiver | undefined;
  afterEach(async () => {
    await harness?.close();
    await receiver?.close();
    harness = receiver = undefined;
  });

  async function subscribe(h: Harness, r: TestReceiver) {
    await h.accounts(ALICE.account);
    const hook = await h.call("POST", "/v3/webhooks", {
      ...ALICE,
      body: { url: `${r.url}/hook`, events: ["payment-debt.created"] },
    });
    expect(hook.status).toBe(201);
  }

  const publish = async (h: Harness) => {
    const debt = await h.call("POST", "/v3/payment-debts", { ...ALICE, body: { amount: "1.00", currency: "eur" } });
    expect(debt.status).toBe(201);
  };

  const outboxRows = async (h: Harness) =>
    Number(
      (await h.hooklane.database.rows<{ n: number }>(sql`select count(*)::int as n from webhook_route_job`))[0]!.n,
    );

  it("deletes no outbox row before its event's dispatches exist", async () => {
    const EVENTS = 20;
    receiver = await startReceiver();
    harness = await startHarness(postgresFactory, { driver: "vercel" });
    const db = harness.hooklane.database;
    // Every deletion of an outbox row is written down with the dispatches its event had at that moment.
    await db.rows(sql`create table test_outbox_deletion (event_id text, dispatches integer)`);
    await db.rows(
      sql.raw(`create function test_outbox_deletion() returns trigger language plpgsql as $$
        begin
          insert into test_outbox_deletion
          select old.message ->> 'eventId', (select count(*) from webhook_dispatch where event_id = old.message ->> 'eventId');
          return old;
        end $$`),
    );
    await db.rows(
      sql.raw(`create trigger test_outbox_deletion before delete on webhook_route_job
        for each row execute function test_outbox_deletion()`),
    );
    await subscribe(harness, receiver);
    for (let i = 0; i < EVENTS; i++) await publish(harness);
    await harness.settled();
    await receiver.waitFor(EVENTS, { timeoutMs: 30_000 });
    await eventually(
      () => outboxRows(harness!),
      (n) => n === 0,
    );
    const deletions = await db.rows<{ event_id: string; dispatches: number }>(
      sql`select event_id, dispatches from test_outbox_deletion`,
    );
    console.info(
      `[outbox] ${EVENTS} events: ${deletions.length} outbox rows deleted, ` +
        `${deletions.filter((d) => d.dispatches === 0).length} before their dispatches existed`,
    );
    expect(deletions).toHaveLength(EVENTS);
    expect(deletions.filter((d) => d.dispatches === 0)).toEqual([]);
  });

  it("records a route message failing until its retention ends as poison, and routes its event once the fault is gone", async () => {
    receiver = await startReceiver();
    harness = await startHarness(postgresFactory, { driver: "vercel" });
    const h = harness;
    const queue = h.queue!;
    const db = h.hooklane.database;
    await subscribe(h, receiver);
    // A fault in the database: while test_route_fault holds a row, no dispatch can be written.
    await db.rows(sql`create table test_route_fault (reason text)`);
    await db.rows(sql`insert into test_route_fault values ('injected')`);
    await db.rows(
      sql.raw(`create function test_route_fault() returns trigger language plpgsql as $$
        begin
          if exists (select 1 from test_route_fault) then raise exception 'injected route fault'; end if;
          return new;
        end $$`),
    );
    await db.rows(
      sql.raw(`create trigger test_route_fault before insert on webhook_dispatch
        for each row execute function test_route_fault()`),
    );
    await publish(h);
    await h.settled();
    const routes = () => queue.messages.filter((m) => m.topic === ROUTE_TOPIC);
    const [message] = await eventually(
      async () => routes(),
      (found) => found.length === 1 && found[0]!.pushedAt.length > 0,
    );

    // Time passes, one push after the other, with a sweep after each: the row is left to its message.
    const hop = async (ms: number) => {
      await h.advance(ms);
      await queue.drained();
      await h.sweepReport({ clock: () => queue.now() });
      expect(routes()).toHaveLength(1);
    };
    for (let i = 0; i < 20 && !message!.acknowledged; i++) {
      await queue.drained();
      await hop(Math.max(0, message!.visibleAt - queue.now()));
      // Its backoff has reached its longest: jump to an hour and a half before the message expires.
      if (message!.visibleAt - queue.now() >= 4 * MINUTE_MS && message!.expiresAt - queue.now() > 2 * 60 * MINUTE_MS) {
        await hop(message!.expiresAt - queue.now() - 90 * MINUTE_MS);
      }
    }
    expect(message!.acknowledged).toBe(true);
    expect(message!.expiresAt).toBeGreaterThan(queue.now());
    expect(receiver.posts).toHaveLength(0);
    expect(await outboxRows(h)).toBe(1);
    const poison = await h.call("GET", "/v3/poison-messages", { account: "acc_ops", admin: true });
    expect(poison.status).toBe(200);
    const [record] = poison.body.data as Array<{ topic: string; error: string; replayable: boolean }>;
    expect(record).toMatchObject({ topic: ROUTE_TOPIC, replayable: true });
    expect(record!.error).toMatch(/retention ran out: .*injected route fault/);

    // The fault is gone; within the hour the sweep forwards the event again, as a new message, and it is routed.
    await db.rows(sql`delete from test_route_fault`);
    await h.advance(61 * MINUTE_MS);
    await h.sweepReport({ clock: () => queue.now() });
    const [post] = await receiver.waitFor(1, { timeoutMs: 30_000 });
    await eventually(
      () => outboxRows(h),
      (n) => n === 0,
    );
    const eventId = (JSON.parse(Buffer.from(message!.body).toString()) as { eventId: string }).eventId;
    console.info(
      `[outbox] a route message failing for ${((queue.now() - message!.createdAt) / 86_400_000).toFixed(1)} days: ` +
        `${message!.pushedAt.length} pushes, poison recorded, routed again as ${routes()
          .map((m) => m.idempotencyKey)
          .join(", ")}`,
    );
    expect(post!.headers["webhook-id"] ?? post!.headers["hooklane-event-id"]).toBe(eventId);
    expect(routes().map((m) => m.idempotencyKey)).toEqual([eventId, `${eventId}:2`]);
    expect(receiver.posts).toHaveLength(1);
  }, 120_000);
});
