import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { webhookDispatch, webhookRecovery } from "../../lib/db/schema.ts";
import { RECOVERY_BATCH, runRecoveryJobsTask } from "../../lib/webhook/sweeper/run-recovery-jobs.ts";
import { HARNESS_START_MS, pgliteFactory, startHarness, type Harness } from "../support/harness.ts";
import { exhaustedDispatches } from "../support/outage-dispatches.ts";

const ALICE = { account: "acc_alice" };
const BOB = { account: "acc_bob" };
const HOUR_MS = 3_600_000;

/** What one account may ask of the lane, and recoveries taking turns across accounts. */
describe("per-account quotas", () => {
  let harness: Harness;

  beforeAll(async () => {
    harness = await startHarness(pgliteFactory, {
      lane: false,
      env: { WEBHOOK_QUOTA_WEBHOOKS: "2", WEBHOOK_QUOTA_TEST_EVENTS: "3", WEBHOOK_QUOTA_RECOVERIES: "2" },
    });
    await harness.accounts(ALICE.account, BOB.account);
  }, HARNESS_START_MS);
  afterAll(() => harness?.close());

  const subscribe = (who: { account: string }, path: string) =>
    harness.call("POST", "/v3/webhooks", { ...who, body: { url: `http://127.0.0.1:4000/${path}`, events: ["*"] } });

  const expectQuota = (answer: Awaited<ReturnType<Harness["call"]>>, quota: string, limit: number) => {
    expect(answer.status, answer.text).toBe(429);
    expect(answer.headers.get("content-type")).toBe("application/problem+json");
    expect(Number(answer.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(answer.body).toMatchObject({
      type: "https://hooklane.dev/errors/rate-limited",
      code: "rate_limited",
      status: 429,
      quota,
      limit,
    });
  };

  it("caps webhooks per account, counts each account alone, and makes room when one is deleted", async () => {
    const first = await subscribe(ALICE, "a1");
    expect((await subscribe(ALICE, "a2")).status).toBe(201);
    expectQuota(await subscribe(ALICE, "a3"), "webhooks", 2);
    expect((await subscribe(BOB, "b1")).status).toBe(201);
    expect((await harness.call("DELETE", `/v3/webhooks/${first.body.id}`, ALICE)).status).toBe(200);
    expect((await subscribe(ALICE, "a3")).status).toBe(201);
  });

  it("caps test events per account and hour, saying when the oldest leaves the hour", async () => {
    const hook = await subscribe(BOB, "b2");
    for (let i = 0; i < 3; i++) {
      expect((await harness.call("POST", `/v3/webhooks/${hook.body.id}/test`, BOB)).status).toBe(202);
    }
    const refused = await harness.call("POST", `/v3/webhooks/${hook.body.id}/test`, BOB);
    expectQuota(refused, "test-events", 3);
    expect(Number(refused.headers.get("retry-after"))).toBeLessThanOrEqual(3_600);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(3_500);
  });

  it("caps unfinished recoveries per account, and runs recoveries in turns across accounts", async () => {
    const { db } = harness.hooklane.database;
    const [aliceHook] = (await harness.call("GET", "/v3/webhooks", ALICE)).body.data;
    const [bobHook] = (await harness.call("GET", "/v3/webhooks", BOB)).body.data;
    await db
      .insert(webhookDispatch)
      .values(exhaustedDispatches(aliceHook.id, ALICE.account, 4 * RECOVERY_BATCH, 30, "a"));
    await db.insert(webhookDispatch).values(exhaustedDispatches(bobHook.id, BOB.account, RECOVERY_BATCH, 30, "b"));
    const since = new Date(Date.now() - HOUR_MS).toISOString();
    const recover = (who: { account: string }, hook: { id: string }, until: string) =>
      harness.call("POST", `/v3/webhooks/${hook.id}/recover`, { ...who, body: { since, until } });

    // Alice starts two recoveries (four batches in all), then asks for a third.
    const half = new Date(Date.now() - 30 * 60_000 + 2 * RECOVERY_BATCH).toISOString();
    const alice1 = await recover(ALICE, aliceHook, half);
    const alice2 = await recover(ALICE, aliceHook, new Date().toISOString());
    expect([alice1.status, alice2.status]).toEqual([202, 202]);
    expectQuota(await recover(ALICE, aliceHook, new Date().toISOString()), "recoveries", 2);
    // Bob's single-batch recovery comes after both of Alice's.
    const bob = await recover(BOB, bobHook, new Date().toISOString());
    expect(bob.status).toBe(202);

    // The sweeper's task, one batch per step: whose job each step advanced.
    const owner = new Map([
      [alice1.body.id, "alice"],
      [alice2.body.id, "alice"],
      [bob.body.id, "bob"],
    ]);
    const context = { hooklane: harness.hooklane, workerId: "sweeper-under-test", now: () => new Date() };
    const turns: string[] = [];
    for (let step = 0; step < 10; step++) {
      const before = await db.select().from(webhookRecovery);
      if (!(await runRecoveryJobsTask.run(context))) break;
      const after = await db.select().from(webhookRecovery);
      const advanced = after.find(
        (job) => job.turnAt?.getTime() !== before.find((b) => b.id === job.id)?.turnAt?.getTime(),
      );
      turns.push(owner.get(advanced!.id)!);
    }
    // Bob did not wait for Alice's four batches: his one batch went second.
    expect(turns.slice(0, 2).sort()).toEqual(["alice", "bob"]);
    expect(turns.filter((who) => who === "bob").length).toBeGreaterThanOrEqual(1);
    const jobs = await db.select().from(webhookRecovery);
    expect(jobs.every((job) => job.status === "completed")).toBe(true);
  });

  it("holds exactly under a burst on the embedded database, its one connection taking turns", async () => {
    const CAROL = { account: "acc_carol" };
    await harness.accounts(CAROL.account);
    const statuses = (answers: Awaited<ReturnType<Harness["call"]>>[]) => answers.map((a) => a.status).sort();
    const creates = await Promise.all(Array.from({ length: 6 }, (_, i) => subscribe(CAROL, `c${i}`)));
    expect(statuses(creates)).toEqual([201, 201, 429, 429, 429, 429]);
    const hook = creates.find((answer) => answer.status === 201)!.body;
    const tests = await Promise.all(
      Array.from({ length: 9 }, () => harness.call("POST", `/v3/webhooks/${hook.id}/test`, CAROL)),
    );
    expect(statuses(tests)).toEqual([202, 202, 202, ...Array(6).fill(429)]);
    const since = new Date(Date.now() - HOUR_MS).toISOString();
    const recoveries = await Promise.all(
      Array.from({ length: 6 }, () =>
        harness.call("POST", `/v3/webhooks/${hook.id}/recover`, { ...CAROL, body: { since } }),
      ),
    );
    expect(statuses(recoveries)).toEqual([202, 202, 429, 429, 429, 429]);
  });
});
