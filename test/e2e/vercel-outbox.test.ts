import { count, eq, sql } from "drizzle-orm";
import { afterEach, describe, expect, it } from "vitest";
import { paymentDebt, webhookRouteJob } from "../../lib/db/schema.ts";
import { ROUTE_TOPIC } from "../../lib/webhook/outbound/webhook-out-queue-registrations.ts";
import { eventually } from "../support/eventually.ts";
import { pgliteFactory, startHarness, type Harness } from "../support/harness.ts";
import { startReceiver, type TestReceiver } from "../support/receiver.ts";

const ADMIN = { account: "acc_ops", admin: true };
/** Long enough for a sweep right after the 2xx to come first, short enough to wait for. */
const FORWARD_GRACE_MS = 5_000;

describe("the vercel transport's outbox", () => {
  const open: Array<{ close(): Promise<void> }> = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((thing) => thing.close()));
  });

  async function setUp(): Promise<{ harness: Harness; receiver: TestReceiver }> {
    const receiver = await startReceiver();
    const harness = await startHarness(pgliteFactory, { driver: "vercel", outboxForwardGraceMs: FORWARD_GRACE_MS });
    open.push(harness, receiver);
    expect(
      (await harness.call("POST", "/v3/accounts", { ...ADMIN, body: { id: "acc_alice", name: "A" } })).status,
    ).toBe(201);
    const hook = await harness.call("POST", "/v3/webhooks", {
      account: "acc_alice",
      body: { url: `${receiver.url}/hook`, events: ["payment-debt.created"] },
    });
    expect(hook.status).toBe(201);
    return { harness, receiver };
  }

  const createDebt = (harness: Harness) =>
    harness.call("POST", "/v3/payment-debts", { account: "acc_alice", body: { amount: "9.99", currency: "EUR" } });

  const outboxRowsOf = (harness: Harness, resourceId: string) =>
    harness.hooklane.database.db
      .select()
      .from(webhookRouteJob)
      .where(sql`${webhookRouteJob.message} ->> 'resourceId' = ${resourceId}`);

  it("commits the outbox row with the mutation, before the 2xx; a process that dies before forwarding it still gets its event delivered by the sweep", async () => {
    const { harness, receiver } = await setUp();
    // The forward after commit never reaches the queue, as when the process is killed right after the commit.
    harness.queue!.holdSends = true;
    const created = await createDebt(harness);
    expect(created.status).toBe(201);
    const id = created.body.id as string;

    const [row] = await outboxRowsOf(harness, id);
    expect(row!.message).toMatchObject({ type: "payment-debt.created", resourceId: id });
    const [debt] = await harness.hooklane.database.db.select().from(paymentDebt).where(eq(paymentDebt.id, id));
    expect(debt!.id).toBe(id);
    expect(harness.queue!.payloads(ROUTE_TOPIC)).toEqual([]);

    // Another process's sweep leaves a fresh row to its own forward for the grace period...
    harness.queue!.holdSends = false;
    expect(await harness.sweep()).toEqual({ routes: 0, dispatches: 0 });
    // ...and forwards it once the grace has passed.
    await eventually(
      () => harness.sweep(),
      (sent) => sent.routes === 1,
      { everyMs: 200 },
    );
    const [post] = await receiver.waitFor(1);
    expect(JSON.parse(post!.body)).toMatchObject({ type: "payment-debt.created", data: { id } });
    expect(await outboxRowsOf(harness, id)).toEqual([]);

    // The forward that never landed fails late; it finds its row gone and sends nothing twice.
    harness.queue!.releaseHeld();
    await harness.settled();
    await harness.queue!.drained();
    expect(harness.queue!.payloads(ROUTE_TOPIC).length).toBe(1);
    expect(await harness.sweep()).toEqual({ routes: 0, dispatches: 0 });
    expect(receiver.posts.length).toBe(1);
  });

  it("answers 5xx and keeps neither the resource nor an event when the outbox row cannot be written", async () => {
    const { harness, receiver } = await setUp();
    const { database } = harness.hooklane;
    await database.rows(sql`
      create function refuse_route_job() returns trigger language plpgsql
      as $$ begin raise exception 'the outbox refuses this row'; end $$
    `);
    await database.rows(sql`
      create trigger refuse_route_job before insert on webhook_route_job
      for each row execute function refuse_route_job()
    `);
    const refused = await createDebt(harness);
    expect(refused.status).toBe(500);
    await harness.settled();
    expect((await database.db.select({ n: count() }).from(paymentDebt))[0]!.n).toBe(0);
    expect((await database.db.select({ n: count() }).from(webhookRouteJob))[0]!.n).toBe(0);
    expect(harness.queue!.payloads(ROUTE_TOPIC)).toEqual([]);

    await database.rows(sql`drop trigger refuse_route_job on webhook_route_job`);
    const created = await createDebt(harness);
    expect(created.status).toBe(201);
    const [post] = await receiver.waitFor(1);
    // The one event delivered is the committed mutation's.
    expect(JSON.parse(post!.body).data.id).toBe(created.body.id);
    expect((await database.db.select({ n: count() }).from(paymentDebt))[0]!.n).toBe(1);
  });
});
