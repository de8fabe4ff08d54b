import { eq, inArray, sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { webhookDispatch } from "../../lib/db/schema.ts";
import { eventually } from "../support/eventually.ts";
import { HARNESS_START_MS, pgliteFactory, startHarness, type Harness } from "../support/harness.ts";
import { startReceiver, type TestReceiver } from "../support/receiver.ts";

const OWNER = { account: "acc_held" };
const HOUR_S = 3_600;

describe("an age limit for events held while a webhook is paused", () => {
  let harness: Harness;
  let receiver: TestReceiver;
  beforeAll(async () => {
    receiver = await startReceiver();
    harness = await startHarness(pgliteFactory, { env: { WEBHOOK_TIMEOUT_MS: "10000" } });
    await harness.accounts(OWNER.account);
  }, HARNESS_START_MS);
  afterAll(async () => {
    await harness?.close();
    await receiver?.close();
  });

  const logOf = (id: string) =>
    harness.hooklane.database.db.select().from(webhookDispatch).where(eq(webhookDispatch.webhookId, id));
  const debts = async (n: number) => {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      ids.push(
        (await harness.call("POST", "/v3/payment-debts", { ...OWNER, body: { amount: "3.00", currency: "EUR" } })).body
          .id,
      );
    }
    await harness.settled();
    return ids;
  };

  it("re-enabled two hours later with a one-hour limit, delivers only the last hour's events and records the rest as skipped", async () => {
    const created = await harness.call("POST", "/v3/webhooks", {
      ...OWNER,
      body: { url: `${receiver.url}/held`, events: ["payment-debt.created"] },
    });
    const id = created.body.id as string;
    expect(created.body.heldEventMaxAge).toBeNull();
    const paused = await harness.call("PATCH", `/v3/webhooks/${id}`, {
      ...OWNER,
      body: { status: "paused", heldEventMaxAge: HOUR_S },
    });
    expect(paused.body).toMatchObject({ status: "paused", heldEventMaxAge: HOUR_S });

    const old = await debts(3);
    await eventually(
      () => logOf(id),
      (rows) => rows.length === 3,
    );
    // Two hours pass on the ledger's clock: the first three events have waited that long.
    await harness.hooklane.database.db
      .update(webhookDispatch)
      .set({ createdAt: sql`${webhookDispatch.createdAt} - interval '2 hours'` })
      .where(eq(webhookDispatch.webhookId, id));
    const recent = await debts(2);
    await eventually(
      () => logOf(id),
      (rows) => rows.length === 5,
    );
    expect(receiver.posts).toHaveLength(0);

    const resumed = await harness.call("PATCH", `/v3/webhooks/${id}`, { ...OWNER, body: { status: "active" } });
    expect(resumed.body.status).toBe("active");
    const delivered = await receiver.waitFor(2);
    expect(new Set(delivered.map((post) => JSON.parse(post.body).data.id))).toEqual(new Set(recent));

    const rows = await eventually(
      () => logOf(id),
      (all) => all.every((row) => row.status !== "pending"),
    );
    const byResource = new Map(rows.map((row) => [JSON.parse(row.payload).data.id as string, row]));
    for (const debt of old) {
      expect(byResource.get(debt)).toMatchObject({
        status: "skipped",
        attemptCount: 0,
        lastError: `held longer than ${HOUR_S} s while paused`,
      });
    }
    for (const debt of recent) expect(byResource.get(debt)).toMatchObject({ status: "success" });
    // The skipped ones are in the delivery log as such, and were never sent.
    const log = await harness.call("GET", `/v3/webhooks/${id}/dispatches?status=skipped`, OWNER);
    expect(log.body.data).toHaveLength(3);
    const skippedIds = rows.filter((row) => row.status === "skipped").map((row) => row.id);
    const again = await harness.hooklane.database.db
      .select()
      .from(webhookDispatch)
      .where(inArray(webhookDispatch.id, skippedIds));
    expect(again.every((row) => row.completedAt !== null)).toBe(true);
    expect(receiver.posts).toHaveLength(2);
  });
});
