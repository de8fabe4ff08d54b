import { eq, sql } from "drizzle-orm";
import { afterEach, describe, expect, it } from "vitest";
import { webhookDispatch } from "../../lib/db/schema.ts";
import { DELIVER_TOPIC } from "../../lib/webhook/outbound/webhook-out-queue-registrations.ts";
import { LANE_QUEUE } from "../../lib/webhook/transport/vercel/vercel-queue-limits.ts";
import { eventually } from "../support/eventually.ts";
import type { Harness } from "../support/harness.ts";
import type { Reply } from "../support/receiver.ts";
import type { EmulatedMessage } from "../support/vercel-queue-emulator.ts";
import { startSubscribedHarness } from "../support/vercel-subscriber.ts";
const HOUR_MS = 3_600_000;

/**
 * The vercel transport against an emulator that holds it to the service's
 * documented limits, with time compressed: the emulator's clock and the
 * ledger's due times move together (`harness.advance`), and every request
 * goes through the real SDK.
 */
describe("the vercel transport within Vercel Queues' documented limits", () => {
  const open: Array<{ close(): Promise<void> }> = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((thing) => thing.close()));
  });

  /** A webhook for every event, `replies` answered in turn (then 200s), and the dispatch of `account.created`. */
  async function setUp(replies: Reply[], env: Record<string, string> = {}) {
    const queue = [...replies];
    const subscribed = await startSubscribedHarness({ reply: () => queue.shift() ?? {}, env, account: true });
    open.push(subscribed);
    const { harness, receiver, webhookId } = subscribed;
    await receiver.waitFor(1);
    const [dispatch] = await eventually(
      () => dispatchesOf(harness, webhookId),
      (rows) => rows[0]?.attemptCount === 1,
    );
    return { harness, receiver, webhookId, dispatchId: dispatch!.id };
  }

  const dispatchesOf = (harness: Harness, webhookId: string) =>
    harness.hooklane.database.db.select().from(webhookDispatch).where(eq(webhookDispatch.webhookId, webhookId));
  const dispatchRow = (harness: Harness, dispatchId: string) =>
    harness.hooklane.database.db.select().from(webhookDispatch).where(eq(webhookDispatch.id, dispatchId));

  const messagesFor = (harness: Harness, dispatchId: string): EmulatedMessage[] =>
    harness.queue!.messages.filter(
      (m) => m.topic === DELIVER_TOPIC && JSON.parse(Buffer.from(m.body).toString()).dispatchId === dispatchId,
    );

  const expectDeliveredOnFirstPush = (message: EmulatedMessage) => {
    expect(message.pushedAt).toHaveLength(1);
    expect(message.pushedAt[0]! - message.createdAt).toBeGreaterThanOrEqual(message.delaySeconds * 1_000);
    expect(message.acknowledged).toBe(true);
  };

  /** The retry message the lane sent after attempt 1 failed. */
  const retryMessage = async (harness: Harness, dispatchId: string) =>
    (
      await eventually(
        async () => messagesFor(harness, dispatchId),
        (found) => found.length === 2,
      )
    )[1]!;

  it("sends the +24 h step with its jitter as one delayed message, delivered when it falls due", async () => {
    const { harness, receiver, dispatchId } = await setUp([{ status: 500 }], { WEBHOOK_RETRY_SCHEDULE: "24h" });
    const retry = await retryMessage(harness, dispatchId);
    expect(retry.delaySeconds).toBeGreaterThanOrEqual(0.9 * 86_400);
    expect(retry.delaySeconds).toBeLessThanOrEqual(1.1 * 86_400 + 1);

    await harness.advance(retry.delaySeconds * 1_000);
    const [post] = await receiver.waitFor(1, { filter: (p) => p.headers["hooklane-attempt"] === "2" });
    expect(post).toBeDefined();
    await harness.queue!.drained();
    // On time: pushed once, when its delay ran out (the clock moved by exactly that), and delivered on that push.
    expectDeliveredOnFirstPush(retry);
    expect(harness.queue!.refusals).toEqual([]);
    const [row] = await eventually(
      () => dispatchRow(harness, dispatchId),
      (rows) => rows[0]?.status === "success",
    );
    expect(row!.attemptCount).toBe(2);
  });

  it("honours a 24 h Retry-After with one message the service accepts", async () => {
    const { harness, receiver, dispatchId } = await setUp([{ status: 503, headers: { "retry-after": "86400" } }]);
    const retry = await retryMessage(harness, dispatchId);
    expect(retry.delaySeconds).toBeGreaterThanOrEqual(86_400);
    await harness.advance(retry.delaySeconds * 1_000);
    await receiver.waitFor(1, { filter: (p) => p.headers["hooklane-attempt"] === "2" });
    await harness.queue!.drained();
    expectDeliveredOnFirstPush(retry);
    expect(harness.queue!.refusals).toEqual([]);
  });

  it("puts back a redelivery that comes 3 h early in hops of at most 1 h, and delivers it when due", async () => {
    const { harness, receiver, dispatchId } = await setUp([{ status: 503, headers: { "retry-after": "10800" } }]);
    const retry = await retryMessage(harness, dispatchId);
    const queue = harness.queue!;
    await queue.drained();
    queue.redeliverNow(retry.id);
    for (let hop = 0; hop < 3; hop++) {
      await eventually(
        async () => retry.pushedAt.length,
        (pushes) => pushes === hop + 1,
      );
      await queue.drained();
      // Put back for an hour at most: never the 3 h the row still waits, which the service would refuse.
      expect(retry.visibleAt - queue.now()).toBeLessThanOrEqual(HOUR_MS);
      expect(retry.acknowledged).toBe(false);
      await harness.advance(HOUR_MS);
    }
    await receiver.waitFor(1, { filter: (p) => p.headers["hooklane-attempt"] === "2" });
    const offsets = retry.pushedAt.map((at) => Math.round((at - retry.pushedAt[0]!) / 1_000));
    expect(offsets).toEqual([0, 3_600, 7_200, 10_800]);
    expect(queue.refusals).toEqual([]);
    expect(receiver.posts.length).toBe(2);
  });

  it("cuts a wait longer than a message may be delayed, and finishes it from a fresh message before the first expires", async () => {
    // 8 d ± 10 % jitter: always beyond the 7 d a message is kept.
    const { harness, receiver, dispatchId } = await setUp([{ status: 500 }], { WEBHOOK_RETRY_SCHEDULE: "8d" });
    const queue = harness.queue!;
    const retry = await retryMessage(harness, dispatchId);
    expect(retry.delaySeconds).toBe(LANE_QUEUE.maxDelaySeconds);
    const [due] = await harness.hooklane.database.rows<{ due_in_ms: number }>(sql`
      select (extract(epoch from (next_attempt_at - now())) * 1000)::float8 as due_in_ms
      from webhook_dispatch where id = ${dispatchId}
    `);
    const dueAt = queue.now() + Number(due!.due_in_ms);
    // Let time pass from one push to the next until the attempt is made (every hop is at most an hour).
    for (let hops = 0; receiver.posts.length < 2 && hops < 100; hops++) {
      await queue.drained();
      const waiting = queue.messages.filter((m) => !m.acknowledged && m.expiresAt > queue.now());
      if (waiting.length === 0) break;
      await harness.advance(Math.max(0, Math.min(...waiting.map((m) => m.visibleAt)) - queue.now()));
    }
    const [post] = await receiver.waitFor(1, { filter: (p) => p.headers["hooklane-attempt"] === "2" });
    await queue.drained();
    const messages = messagesFor(harness, dispatchId);
    const fresh = messages.at(-1)!;
    // The first retry message was replaced within its retention, never let expire, and nothing was refused.
    expect(messages).toHaveLength(3);
    expect(retry.acknowledged).toBe(true);
    expect(Math.max(...retry.pushedAt)).toBeLessThan(retry.expiresAt);
    expect(fresh.idempotencyKey).toMatch(new RegExp(`^${dispatchId}:1:2:[0-9a-f-]{36}$`));
    expect(fresh.pushedAt).toHaveLength(1);
    expect(fresh.pushedAt[0]! - dueAt).toBeGreaterThanOrEqual(0);
    expect(fresh.pushedAt[0]! - dueAt).toBeLessThan(60_000);
    expect(queue.refusals).toEqual([]);
    expect(post).toBeDefined();
  }, 180_000);

  it("delivers a manual retry within seconds: the new run's message is not a duplicate of the old one", async () => {
    const { harness, receiver, dispatchId } = await setUp([{ status: 500 }, { status: 500 }], {
      WEBHOOK_RETRY_SCHEDULE: "100ms",
    });
    await eventually(
      () => dispatchRow(harness, dispatchId),
      (rows) => rows[0]?.status === "exhausted",
    );
    const retried = await harness.call("POST", `/v3/webhook-dispatches/${dispatchId}/retry`, { account: "acc_alice" });
    expect(retried.status).toBe(202);
    const [post] = await receiver.waitFor(3, { timeoutMs: 10_000 });
    expect(post).toBeDefined();
    expect(messagesFor(harness, dispatchId).map((m) => m.idempotencyKey)).toEqual([
      `${dispatchId}:1:1`,
      `${dispatchId}:1:2`,
      `${dispatchId}:2:1`,
    ]);
  });

  it("delivers a recovery within seconds of the sweep that runs it", async () => {
    const { harness, receiver, webhookId, dispatchId } = await setUp([{ status: 500 }, { status: 500 }], {
      WEBHOOK_RETRY_SCHEDULE: "100ms",
    });
    await eventually(
      () => dispatchRow(harness, dispatchId),
      (rows) => rows[0]?.status === "exhausted",
    );
    const since = new Date(Date.now() - HOUR_MS).toISOString();
    const recovery = await harness.call("POST", `/v3/webhooks/${webhookId}/recover`, {
      account: "acc_alice",
      body: { since },
    });
    expect(recovery.status).toBe(202);
    const report = await harness.sweepReport();
    expect(report.phases["run-recovery-jobs"]!.steps).toBeGreaterThan(0);
    await receiver.waitFor(3, { timeoutMs: 10_000 });
    expect(messagesFor(harness, dispatchId).at(-1)!.idempotencyKey).toBe(`${dispatchId}:2:1`);
  });
});
