import { eq, inArray, sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TEST_MODES, webhook, webhookDispatch } from "../../lib/db/schema.ts";
import { disableFailingWebhooks } from "../../lib/db/sql/disable-failing-webhooks.ts";
import { eventually } from "../support/eventually.ts";
import { freePort } from "../support/free-port.ts";
import { HARNESS_START_MS, startHarness, type Harness } from "../support/harness.ts";
import { postgresFactory } from "../support/postgres.ts";
import { startReceiver, type TestReceiver } from "../support/receiver.ts";

const ALICE = { account: "acc_standing" };
const DAY_MS = 86_400_000;

/**
 * Rehearsing rejections must not mark an endpoint broken: a test event in a
 * failure mode is attempted once, and no test event counts toward health,
 * the circuit breaker, auto-disable or the owner's notifications.
 */
describe("test events leave an endpoint's standing as it was (PostgreSQL lane)", () => {
  let harness: Harness;
  let receiver: TestReceiver;
  let refusedUrl: string;

  beforeAll(async () => {
    // A correct receiver rejects what the failure modes send; `/gone` says the endpoint is gone for good.
    receiver = await startReceiver((post) =>
      post.path === "/gone" ? { status: 410 } : post.path === "/ok" ? { status: 200 } : { status: 400 },
    );
    refusedUrl = `http://127.0.0.1:${await freePort()}/refused`;
    harness = await startHarness(postgresFactory, {
      env: { WEBHOOK_RETRY_SCHEDULE: "50ms,50ms,50ms,50ms,50ms", WEBHOOK_BREAKER_THRESHOLD: "2" },
    });
    await harness.accounts(ALICE.account);
  }, HARNESS_START_MS);
  afterAll(async () => {
    await harness?.close();
    await receiver?.close();
  });

  const create = async (url: string) => {
    const created = await harness.call("POST", "/v3/webhooks", { ...ALICE, body: { url, events: ["*"] } });
    expect(created.status).toBe(201);
    return created.body.id as string;
  };
  /** What the console and the API say of the webhook's standing, without the moving window's start. */
  const standing = async (id: string) => {
    const { since: _since, ...health } = (await harness.call("GET", `/v3/webhooks/${id}/health`, ALICE)).body;
    const [row] = await harness.hooklane.database.db
      .select({
        status: webhook.status,
        breakerFailures: webhook.breakerFailures,
        breakerOpens: webhook.breakerOpens,
        breakerOpenUntil: webhook.breakerOpenUntil,
      })
      .from(webhook)
      .where(eq(webhook.id, id));
    const notifications = (await harness.call("GET", "/v3/notifications?limit=100", ALICE)).body.data.filter(
      (n: { webhook: string }) => n.webhook === id,
    );
    return { health, row, notifications };
  };
  /** Sends a test event in each of `modes`, waits for each to finish, returns the dispatches. */
  const rehearse = async (id: string, modes: readonly string[]) => {
    const ids: string[] = [];
    for (const mode of modes) {
      const sent = await harness.call("POST", `/v3/webhooks/${id}/test`, { ...ALICE, body: { mode } });
      expect(sent.status).toBe(202);
      ids.push(sent.body.id);
    }
    return eventually(
      () =>
        harness.hooklane.database.db
          .select({
            id: webhookDispatch.id,
            testMode: webhookDispatch.testMode,
            status: webhookDispatch.status,
            attempts: webhookDispatch.attemptCount,
          })
          .from(webhookDispatch)
          .where(inArray(webhookDispatch.id, ids)),
      (rows) => rows.length === ids.length && rows.every((r) => r.status === "exhausted" || r.status === "success"),
      { timeoutMs: 20_000 },
    );
  };

  it("a rejected test event in each failure mode: one attempt, health and notifications unchanged", async () => {
    const id = await create(`${receiver.url}/reject`);
    // A real standing first: one real event, delivered (answered 200 while the URL points at /ok).
    await harness.call("PATCH", `/v3/webhooks/${id}`, { ...ALICE, body: { url: `${receiver.url}/ok` } });
    await harness.call("POST", "/v3/payment-debts", { ...ALICE, body: { amount: "3.00", currency: "EUR" } });
    await eventually(
      () => harness.call("GET", `/v3/webhooks/${id}/health`, ALICE),
      (answer) => answer.body.succeeded === 1 && answer.body.backlog.inFlight === 0,
    );
    await harness.call("PATCH", `/v3/webhooks/${id}`, { ...ALICE, body: { url: `${receiver.url}/reject` } });
    const before = await standing(id);
    expect(before.health).toMatchObject({ failuresInARow: 0, verdict: "healthy", lastStatusCode: 200 });

    const rows = await rehearse(id, TEST_MODES);
    console.log(`[standing] rejected tests: ${rows.map((r) => `${r.testMode}→${r.status}/${r.attempts}`).join(", ")}`);
    for (const row of rows) expect(row).toMatchObject({ status: "exhausted", attempts: 1 });
    // One POST each: a `duplicate` event's second copy follows only an accepted first.
    expect(receiver.posts.filter((p) => p.path === "/reject")).toHaveLength(TEST_MODES.length);
    expect(await standing(id)).toEqual(before);
  });

  it("an unreachable endpoint's test events open no breaker; a 410 to a test disables nothing", async () => {
    const refused = await create(refusedUrl);
    const before = await standing(refused);
    // Threshold 2: three rehearsals of each mode would open it three times over if they counted.
    const rows = await rehearse(refused, [...TEST_MODES, ...TEST_MODES, ...TEST_MODES]);
    for (const row of rows) expect(row).toMatchObject({ status: "exhausted", attempts: 1 });
    const after = await standing(refused);
    console.log(`[standing] refused: ${rows.length} tests, breaker failures ${after.row?.breakerFailures}`);
    expect(after).toEqual(before);
    expect(after.row).toMatchObject({ breakerFailures: 0, breakerOpens: 0, breakerOpenUntil: null });

    const gone = await create(`${receiver.url}/gone`);
    const goneBefore = await standing(gone);
    const [answered] = await rehearse(gone, ["normal"]);
    expect(answered).toMatchObject({ status: "exhausted", attempts: 6 });
    expect(await standing(gone)).toMatchObject({ row: { status: "active" }, notifications: goneBefore.notifications });
  });

  it("a normal test event keeps the schedule, but its failures count toward nothing", async () => {
    const id = await create(`${receiver.url}/reject`);
    const before = await standing(id);
    const [row] = await rehearse(id, ["normal"]);
    expect(row).toMatchObject({ status: "exhausted", attempts: 6 });
    expect(await standing(id)).toEqual(before);
  });

  it("a webhook whose only failures in the window are test events is not auto-disabled", async () => {
    const id = await create(`${receiver.url}/reject`);
    await rehearse(id, ["late", "bad-signature"]);
    // Spread the failures over the whole window, as the rule asks of real ones: 8 days old and now.
    const db = harness.hooklane.database.db;
    const [first] = await db
      .select({ id: webhookDispatch.id })
      .from(webhookDispatch)
      .where(eq(webhookDispatch.webhookId, id));
    await db
      .update(webhookDispatch)
      .set({ createdAt: sql`now() - interval '8 days'` })
      .where(eq(webhookDispatch.id, first!.id));
    await db
      .update(webhook)
      .set({ statusChangedAt: sql`now() - interval '9 days'` })
      .where(eq(webhook.id, id));
    const rule = { now: new Date(), windowMs: 7 * DAY_MS, reason: "every delivery failed for 7 days" };
    expect(await disableFailingWebhooks(harness.hooklane.database, rule)).not.toContain(id);
    // The same failures as real events would disable it: the rule itself is live.
    await db
      .update(webhookDispatch)
      .set({ eventType: "payment-debt.created", testMode: null })
      .where(eq(webhookDispatch.webhookId, id));
    expect(await disableFailingWebhooks(harness.hooklane.database, rule)).toContain(id);
  });
});
