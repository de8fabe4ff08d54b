import { count, eq } from "drizzle-orm";
import { afterEach, describe, expect, it } from "vitest";
import { createHooklane } from "../../lib/create-hooklane.ts";
import { createVercelLane } from "../../lib/create-vercel-lane.ts";
import { webhookDispatch, webhookDispatchOpen, webhookRouteJob } from "../../lib/db/schema.ts";
import { DELIVER_TOPIC, ROUTE_TOPIC } from "../../lib/webhook/outbound/webhook-out-queue-registrations.ts";
import { handleRouteMessage } from "../../lib/webhook/outbound/webhook-out-route.handler.ts";
import { DELIVER_MESSAGE_GRACE_MS } from "../../lib/webhook/transport/vercel/vercel-transport.ts";
import { eventually } from "../support/eventually.ts";
import { testConfig, type Harness } from "../support/harness.ts";
import type { Reply } from "../support/receiver.ts";
import { consumeLane } from "../support/vercel-queue-emulator.ts";
import { startSubscribedHarness } from "../support/vercel-subscriber.ts";

const ADMIN = { account: "acc_ops", admin: true };

/** How the vercel transport takes the service's other answers: 202, 429, silence, and a deployment that is gone. */
describe("the vercel transport facing the queue service's answers", () => {
  const open: Array<{ close(): Promise<void> }> = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((thing) => thing.close()));
  });

  async function setUp(options: { reply?: () => Reply; env?: Record<string, string>; lane?: boolean } = {}) {
    const subscribed = await startSubscribedHarness(options);
    open.push(subscribed);
    return subscribed;
  }

  /** An `account.updated` of acc_alice, whose webhook takes every event. */
  const renameAccount = (harness: Harness) =>
    harness.call("PATCH", "/v3/accounts/acc_alice", { ...ADMIN, body: { name: "Alice" } });
  const outboxRows = async (harness: Harness) =>
    (await harness.hooklane.database.db.select({ n: count() }).from(webhookRouteJob))[0]!.n;

  it("takes a message accepted for deferred processing (202, no id) as sent", async () => {
    const { harness, receiver } = await setUp();
    harness.queue!.deferSends = true;
    expect((await renameAccount(harness)).status).toBe(200);
    await harness.settled();
    await receiver.waitFor(1);
    expect(await outboxRows(harness)).toBe(0);
    expect(harness.hooklane.transport.sent).toMatchObject({ fallback: 0, refused: 0 });
  });

  it("leaves a dispatch whose deliver send was rate limited (429) to the sweep, which sends it", async () => {
    const { harness, receiver } = await setUp();
    expect((await renameAccount(harness)).status).toBe(200);
    await receiver.waitFor(1);
    harness.queue!.throttle(1, 5);
    const ids = await handleRouteMessage(harness.hooklane, {
      eventId: "evt_throttled_0001",
      type: "account.updated",
      resourceId: "acc_alice",
      occurredAt: new Date().toISOString(),
      livemode: true,
    });
    expect(ids).toHaveLength(1);
    expect(harness.hooklane.transport.sent).toMatchObject({ refused: 1 });
    const [row] = await harness.hooklane.database.db
      .select()
      .from(webhookDispatchOpen)
      .where(eq(webhookDispatchOpen.dispatchId, ids[0]!));
    expect(row!.queuedUntil).toBeNull(); // carried by nothing: the next sweep's
    expect(await harness.sweep()).toEqual({ routes: 0, dispatches: 1 });
    await receiver.waitFor(1, { filter: (p) => p.headers["hooklane-event-id"] === "evt_throttled_0001" });
  });

  it("gives up on a queue that does not answer, and delivers the event once after the sweep", async () => {
    const { harness, receiver } = await setUp();
    const release = harness.queue!.stallSends();
    expect((await renameAccount(harness)).status).toBe(200);
    await harness.settled(); // the forward gave up: the API never waited for it
    expect(harness.hooklane.transport.sent).toMatchObject({ route: 0, fallback: 1 });
    expect(await outboxRows(harness)).toBe(1);
    // The service answers at last (it took the message after all); the sweep's copy has the same key.
    release();
    expect((await harness.sweep()).routes).toBe(1);
    await receiver.waitFor(1);
    await harness.queue!.drained();
    expect(harness.queue!.payloads(ROUTE_TOPIC)).toHaveLength(1);
    expect(receiver.posts).toHaveLength(1);
  });

  it("re-sends from the current deployment a retry pinned to one that was deleted", async () => {
    const replies: Reply[] = [{ status: 500 }];
    const { harness, receiver, webhookId } = await setUp({
      reply: () => replies.shift() ?? {},
      env: { WEBHOOK_RETRY_SCHEDULE: "1h" },
      lane: false,
    });
    const queue = harness.queue!;
    // Two deployments of the lane on the same database, each sending pinned to itself (the SDK's default on Vercel).
    const deploy = async (deploymentId: string) => {
      const hooklane = await createHooklane(
        testConfig({ WEBHOOK_QUEUE_DRIVER: "vercel", WEBHOOK_RETRY_SCHEDULE: "1h" }),
        {
          database: harness.hooklane.database,
          queue: queue.clientFor(deploymentId),
        },
      );
      const lane = createVercelLane(hooklane, { now: () => queue.now() });
      consumeLane(queue, lane.handler, { deploymentId });
      return lane;
    };
    await deploy("dpl_old");
    expect((await renameAccount(harness)).status).toBe(200);
    await receiver.waitFor(1);
    const [dispatch] = await eventually(
      () =>
        harness.hooklane.database.db
          .select({
            eventId: webhookDispatch.eventId,
            attemptCount: webhookDispatch.attemptCount,
            lockedUntil: webhookDispatchOpen.lockedUntil,
          })
          .from(webhookDispatch)
          .innerJoin(webhookDispatchOpen, eq(webhookDispatchOpen.dispatchId, webhookDispatch.id))
          .where(eq(webhookDispatch.webhookId, webhookId)),
      (rows) => rows[0]?.attemptCount === 1 && rows[0].lockedUntil === null,
    );
    const retry = await eventually(
      async () => queue.messages.filter((m) => m.topic === DELIVER_TOPIC && m.deploymentId === "dpl_old"),
      (found) => found.length === 2,
    );

    const current = await deploy("dpl_new");
    queue.retire("dpl_old");
    await harness.advance(retry[1]!.delaySeconds * 1_000);
    await queue.drained();
    expect(retry[1]!.pushedAt).toEqual([]); // its deployment is gone
    await harness.advance(DELIVER_MESSAGE_GRACE_MS);
    const report = await current.sweep();
    expect(report.phases.stranded!.items).toBe(1);
    const [post] = await receiver.waitFor(1, { filter: (p) => p.headers["hooklane-attempt"] === "2" });
    expect(post!.headers["hooklane-event-id"]).toBe(dispatch!.eventId);
    expect(queue.messages.filter((m) => m.deploymentId === "dpl_new" && m.topic === DELIVER_TOPIC)).toHaveLength(1);
  });
});
