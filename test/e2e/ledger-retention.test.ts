import { and, count, eq, inArray, sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { webhook, webhookAttempt, webhookDispatch, webhookDispatchOpen } from "../../lib/db/schema.ts";
import { LEDGER_PRUNE_BATCH, pruneLedgerTask } from "../../lib/webhook/sweeper/prune-ledger.ts";
import { HARNESS_START_MS, pgliteFactory, startHarness, type Harness } from "../support/harness.ts";
import { insertLedgerRows } from "../support/ledger-rows.ts";

const OWNER = { account: "acc_retention", sub: "retention-owner" };
const HOUR_S = 3_600;
const DAY_MS = 86_400_000;

describe("retention: the sweeper prunes old attempts and finished dispatches in batches", () => {
  let harness: Harness;
  beforeAll(async () => {
    harness = await startHarness(pgliteFactory, { lane: false, env: { WEBHOOK_RETENTION: "1d" } });
    await harness.accounts(OWNER.account);
  }, HARNESS_START_MS);
  afterAll(() => harness?.close());

  it("with a retention of one day on an injected clock, removes exactly the old attempts and finished dispatches, then the deleted webhook", async () => {
    const { database } = harness.hooklane;
    const { db } = database;
    const subscribe = async (path: string) =>
      (
        await harness.call("POST", "/v3/webhooks", {
          ...OWNER,
          body: { url: `http://127.0.0.1:4000${path}`, events: ["payment-debt.created"] },
        })
      ).body.id as string;
    const live = await subscribe("/live");
    const doomed = await subscribe("/doomed");
    await db
      .update(webhook)
      .set({ status: "paused" })
      .where(inArray(webhook.id, [live, doomed]));
    // Three hours ago: 1,200 delivered, 30 exhausted; and 20 still failing (open: kept, whatever their age).
    const rows = { webhookId: live, account: OWNER.account, ageSeconds: 3 * HOUR_S };
    await insertLedgerRows(database, { ...rows, count: 1_200, status: "success", tag: "old" });
    await insertLedgerRows(database, { ...rows, count: 30, status: "exhausted", tag: "oldx" });
    await insertLedgerRows(database, { ...rows, count: 20, status: "error", tag: "open" });
    // Five minutes ago: 40 delivered.
    await insertLedgerRows(database, { ...rows, ageSeconds: 300, count: 40, status: "success", tag: "new" });
    // The doomed webhook's log: 10 delivered three hours ago; then it is deleted (three hours ago too).
    await insertLedgerRows(database, { ...rows, webhookId: doomed, count: 10, status: "success", tag: "doomed" });
    expect((await harness.call("DELETE", `/v3/webhooks/${doomed}`, OWNER)).status).toBe(200);
    await db
      .update(webhook)
      .set({ deletedAt: sql`now() - interval '3 hours'` })
      .where(eq(webhook.id, doomed));
    // Until retention, the deleted webhook's log is readable.
    const before = await harness.call("GET", `/v3/webhooks/${doomed}/dispatches`, OWNER);
    expect(before.body.data).toHaveLength(10);

    // On the real clock nothing is a day old: a sweep removes nothing.
    const context = { hooklane: harness.hooklane, workerId: "retention-under-test" };
    expect(await pruneLedgerTask.run({ ...context, now: () => new Date() })).toBe(false);
    expect(await countOf(webhookDispatch)).toBe(1_300);

    // The clock moves 22 h on: the cutoff is two hours ago. Batches of 500 until nothing is left to prune.
    const later = () => new Date(Date.now() + DAY_MS - 2 * HOUR_S * 1_000);
    let steps = 1;
    while (await pruneLedgerTask.run({ ...context, now: later })) {
      steps++;
      expect(steps).toBeLessThan(20);
    }
    expect(LEDGER_PRUNE_BATCH).toBe(500);
    // 1,260 old attempts and 1,240 old finished dispatches: three steps of at most 500 each.
    expect(steps).toBe(3);

    const left = await db
      .select({ id: webhookDispatch.eventId, status: webhookDispatch.status })
      .from(webhookDispatch)
      .where(eq(webhookDispatch.webhookId, live));
    expect(left.filter((row) => row.id.startsWith("evt_new_"))).toHaveLength(40);
    expect(left.filter((row) => row.id.startsWith("evt_open_"))).toHaveLength(20);
    expect(left).toHaveLength(60);
    // Attempts: the recent ones only (the open dispatches' three-hour-old attempts are past retention too).
    const attempts = await db
      .select({ n: count() })
      .from(webhookAttempt)
      .innerJoin(webhookDispatch, eq(webhookDispatch.id, webhookAttempt.dispatchId))
      .where(and(eq(webhookDispatch.webhookId, live), sql`${webhookDispatch.eventId} like 'evt_new_%'`));
    expect(attempts[0]!.n).toBe(40);
    expect(await countOf(webhookAttempt)).toBe(40);
    // The deleted webhook went with its log.
    expect(await db.select().from(webhook).where(eq(webhook.id, doomed))).toEqual([]);
    expect((await harness.call("GET", `/v3/webhooks/${doomed}/dispatches`, OWNER)).status).toBe(404);
    expect(await db.select({ id: webhook.id }).from(webhook).where(eq(webhook.id, live))).toHaveLength(1);
  });

  async function countOf(table: typeof webhookDispatch | typeof webhookAttempt): Promise<number> {
    const [row] = await harness.hooklane.database.db.select({ n: count() }).from(table);
    return row!.n;
  }

  it("finishes as skipped what an attempt held when its webhook was deleted, so retention can remove it later", async () => {
    const { database } = harness.hooklane;
    const { db } = database;
    const created = await harness.call("POST", "/v3/webhooks", {
      ...OWNER,
      body: { url: "http://127.0.0.1:4000/busy", events: ["payment-debt.created"] },
    });
    const id = created.body.id as string;
    await insertLedgerRows(database, {
      webhookId: id,
      account: OWNER.account,
      ageSeconds: 60,
      count: 3,
      status: "error",
      tag: "held",
    });
    const mine = eq(webhookDispatch.webhookId, id);
    const theirOpenRows = eq(webhookDispatchOpen.webhookId, id);
    // An attempt holds them while the webhook is deleted, so the delete leaves them open…
    await db
      .update(webhookDispatchOpen)
      .set({ lockedUntil: sql`now() + interval '1 minute'`, lockedBy: "busy" })
      .where(theirOpenRows);
    expect((await harness.call("DELETE", `/v3/webhooks/${id}`, OWNER)).status).toBe(200);
    // …and records them as failing afterwards: open, on a webhook nothing claims any more.
    await db.update(webhookDispatchOpen).set({ lockedUntil: null, lockedBy: null }).where(theirOpenRows);
    expect((await db.select().from(webhookDispatch).where(mine)).map((row) => row.status)).toEqual(
      Array(3).fill("error"),
    );

    await pruneLedgerTask.run({ hooklane: harness.hooklane, workerId: "retention-under-test", now: () => new Date() });
    const rows = await db.select().from(webhookDispatch).where(mine);
    expect(rows.map((row) => [row.status, row.lastError, row.completedAt !== null])).toEqual(
      Array(3).fill(["skipped", "webhook deleted", true]),
    );
  });
});
