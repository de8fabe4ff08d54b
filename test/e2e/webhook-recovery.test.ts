import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startLane } from "../../lib/create-hooklane.ts";
import { webhookDispatch } from "../../lib/db/schema.ts";
import { RECOVERY_BATCH, runRecoveryJobsTask } from "../../lib/webhook/sweeper/run-recovery-jobs.ts";
import type { Lane } from "../../lib/webhook/transport/postgres/postgres-lane.ts";
import { eventually } from "../support/eventually.ts";
import { HARNESS_START_MS, pgliteFactory, startHarness, type Harness } from "../support/harness.ts";
import { exhaustedDispatches } from "../support/outage-dispatches.ts";
import { startReceiver, type TestReceiver } from "../support/receiver.ts";

const OWNER = { account: "acc_recover" };
const HOUR_MS = 3_600_000;
describe("the delivery log, manual retry and bulk recovery", () => {
  let harness: Harness;
  let receiver: TestReceiver;
  let lane: Lane | undefined;
  const answers = new Map<string, number>();

  beforeAll(async () => {
    receiver = await startReceiver((post) => ({ status: answers.get(post.path) ?? 200 }));
    // A modest pool and a generous deadline: 1,000 POSTs to a receiver in this same process stay well clear of timeouts.
    harness = await startHarness(pgliteFactory, {
      lane: false,
      env: { WEBHOOK_CONCURRENCY: "20", WEBHOOK_TIMEOUT_MS: "10000" },
    });
    await harness.accounts(OWNER.account);
  }, HARNESS_START_MS);
  afterAll(async () => {
    await lane?.stop();
    await harness?.close();
    await receiver?.close();
  });

  it(
    "recovers 1,000 exhausted dispatches in batches with readable progress, and delivers all of them",
    { timeout: 90_000 },
    async () => {
      const hook = await harness.call("POST", "/v3/webhooks", {
        ...OWNER,
        body: { url: `${receiver.url}/recovered`, events: ["*"] },
      });
      const { db } = harness.hooklane.database;
      // An outage 30 minutes ago left 1,000 exhausted dispatches; one from 3 h ago is outside the window.
      await db.insert(webhookDispatch).values(exhaustedDispatches(hook.body.id, OWNER.account, 1_000, 30, "outage"));
      await db.insert(webhookDispatch).values(exhaustedDispatches(hook.body.id, OWNER.account, 1, 180, "older"));

      const since = new Date(Date.now() - HOUR_MS).toISOString();
      const started = await harness.call("POST", `/v3/webhooks/${hook.body.id}/recover`, { ...OWNER, body: { since } });
      expect(started.status).toBe(202);
      expect(started.body).toMatchObject({ object: "webhook-recovery", status: "pending", total: null, requeued: 0 });
      const progress = () =>
        harness.call("GET", `/v3/webhooks/${hook.body.id}/recoveries/${started.body.id}`, OWNER).then((r) => r.body);

      // The sweeper's task, step by step: one batch per step, progress visible after each.
      const context = { hooklane: harness.hooklane, workerId: "sweeper-under-test", now: () => new Date() };
      const seen: number[] = [];
      while (await runRecoveryJobsTask.run(context)) {
        const now = await progress();
        seen.push(now.requeued);
        expect(now).toMatchObject({ total: 1_000 });
      }
      expect(seen).toEqual([200, 400, 600, 800, 1_000, 1_000]);
      expect(RECOVERY_BATCH).toBe(200);
      const requeued = await progress();
      expect(requeued).toMatchObject({ status: "completed", total: 1_000, requeued: 1_000, delivered: 0, failed: 0 });

      // The lane delivers them.
      lane = await startLane(harness.hooklane);
      const done = await eventually(progress, (now) => now.delivered === 1_000, { timeoutMs: 60_000 });
      expect(done).toMatchObject({ status: "completed", requeued: 1_000, delivered: 1_000, failed: 0 });
      const delivered = receiver.posts.filter((post) => post.path === "/recovered");
      expect(new Set(delivered.map((post) => post.headers["hooklane-event-id"])).size).toBe(1_000);
      // Each started over from attempt 1 (a slow answer may have been retried as attempt 2).
      const firstAttempts = new Map<string, number>();
      for (const post of delivered) {
        const id = String(post.headers["hooklane-event-id"]);
        firstAttempts.set(id, Math.min(firstAttempts.get(id) ?? Infinity, Number(post.headers["hooklane-attempt"])));
      }
      expect(new Set(firstAttempts.values())).toEqual(new Set([1]));
      expect(delivered.some((post) => JSON.parse(post.body).id.startsWith("evt_older"))).toBe(false);

      const log = await harness.call("GET", `/v3/webhooks/${hook.body.id}/dispatches?status=exhausted`, OWNER);
      expect(log.body.data.map((d: { event: { id: string } }) => d.event.id)).toEqual(["evt_older_000000"]);
    },
  );

  it("retries one dispatch now: a new run from attempt 1, logged beside the first", async () => {
    answers.set("/flaky", 500);
    const hook = await harness.call("POST", "/v3/webhooks", {
      ...OWNER,
      body: { url: `${receiver.url}/flaky`, events: ["*"] },
    });
    lane ??= await startLane(harness.hooklane);
    const test = await harness.call("POST", `/v3/webhooks/${hook.body.id}/test`, OWNER);
    const read = () => harness.call("GET", `/v3/webhook-dispatches/${test.body.id}`, OWNER).then((r) => r.body);
    await eventually(read, (d) => d.status === "exhausted");

    answers.set("/flaky", 200);
    const retried = await harness.call("POST", `/v3/webhook-dispatches/${test.body.id}/retry`, OWNER);
    expect(retried.status).toBe(202);
    expect(retried.body).toMatchObject({ status: "pending", run: 2, attemptCount: 0 });
    const done = await eventually(read, (d) => d.status === "success");
    expect(
      done.attempts.map((a: { run: number; attempt: number; outcome: string; statusCode: number }) => [
        a.run,
        a.attempt,
        a.outcome,
        a.statusCode,
      ]),
    ).toEqual([
      ...[1, 2, 3, 4, 5].map((attempt) => [1, attempt, "retry", 500]),
      [1, 6, "failed", 500],
      [2, 1, "success", 200],
    ]);
    expect(done.attempts.at(-1).signature).toEqual({
      timestamp: expect.any(Number),
      scheme: "hooklane-v1",
      signatures: 1,
    });
    // The body is answered as JSON; the bytes POSTed are its compact form.
    expect(JSON.stringify(done.payload)).toBe(receiver.posts.at(-1)!.body);
    expect(
      receiver.posts.filter((post) => post.path === "/flaky").map((post) => post.headers["hooklane-attempt"]),
    ).toEqual(["1", "2", "3", "4", "5", "6", "1"]);

    // Pending already: nothing to retry.
    await harness.call("PATCH", `/v3/webhooks/${hook.body.id}`, { ...OWNER, body: { status: "paused" } });
    await harness.call("POST", `/v3/webhook-dispatches/${test.body.id}/retry`, OWNER);
    const again = await harness.call("POST", `/v3/webhook-dispatches/${test.body.id}/retry`, OWNER);
    expect(again.status).toBe(409);
  });

  it("lists the delivery log newest first, filtered by status and time, in cursor pages; validates its input", async () => {
    const hook = await harness.call("POST", "/v3/webhooks", {
      ...OWNER,
      body: { url: `${receiver.url}/log`, events: ["*"] },
    });
    await harness.hooklane.database.db
      .insert(webhookDispatch)
      .values([
        ...exhaustedDispatches(hook.body.id, OWNER.account, 3, 10, "recent"),
        ...exhaustedDispatches(hook.body.id, OWNER.account, 2, 120, "early"),
      ]);
    const page = (query: string) =>
      harness.call("GET", `/v3/webhooks/${hook.body.id}/dispatches?${query}`, OWNER).then((r) => r.body);
    const ids = (body: { data: Array<{ event: { id: string } }> }) => body.data.map((d) => d.event.id);

    const first = await page("limit=2");
    expect(ids(first)).toEqual(["evt_recent_000002", "evt_recent_000001"]);
    const second = await page(`limit=2&cursor=${first.nextCursor}`);
    expect(ids(second)).toEqual(["evt_recent_000000", "evt_early_000001"]);
    const third = await page(`limit=2&cursor=${second.nextCursor}`);
    expect(ids(third)).toEqual(["evt_early_000000"]);
    expect(third.nextCursor).toBeNull();

    const hourAgo = new Date(Date.now() - HOUR_MS).toISOString();
    expect(ids(await page(`since=${hourAgo}`))).toEqual([
      "evt_recent_000002",
      "evt_recent_000001",
      "evt_recent_000000",
    ]);
    expect(ids(await page(`until=${hourAgo}`))).toEqual(["evt_early_000001", "evt_early_000000"]);
    expect(ids(await page("status=success"))).toEqual([]);
    const bad = await harness.call("GET", `/v3/webhooks/${hook.body.id}/dispatches?status=lost`, OWNER);
    expect(bad.status).toBe(422);
    expect(bad.body.errors[0].field).toBe("status");

    const future = new Date(Date.now() + HOUR_MS).toISOString();
    const empty = await harness.call("POST", `/v3/webhooks/${hook.body.id}/recover`, {
      ...OWNER,
      body: { since: future },
    });
    expect(empty.status).toBe(422);
    expect(empty.body.errors[0].field).toBe("until");
  });
});
