import { eq } from "drizzle-orm";
import { afterEach, describe, expect, it } from "vitest";
import { webhook, webhookAttempt, webhookDispatch } from "../../lib/db/schema.ts";
import { eventually } from "../support/eventually.ts";
import { pgliteFactory, startHarness, type Harness } from "../support/harness.ts";
import { startReceiver } from "../support/receiver.ts";

const ADMIN = { account: "acc_ops", admin: true };

// Each test boots an embedded database; the first one also builds its template.
describe("outbound safety through the pipeline", { timeout: 60_000 }, () => {
  const open: Array<{ close(): Promise<void> }> = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((thing) => thing.close()));
  });

  async function setUp(env: Record<string, string>, lane = true) {
    const receiver = await startReceiver();
    const harness = await startHarness(pgliteFactory, { env, lane });
    open.push(harness, receiver);
    return { harness, receiver };
  }

  async function subscribe(harness: Harness, url: string) {
    return harness.call("POST", "/v3/webhooks", { ...ADMIN, body: { url, events: ["*"], scope: "global" } });
  }

  async function attemptsOf(harness: Harness, webhookId: string) {
    const { db } = harness.hooklane.database;
    return db
      .select({
        attempt: webhookAttempt.attempt,
        outcome: webhookAttempt.outcome,
        errorClass: webhookAttempt.errorClass,
      })
      .from(webhookAttempt)
      .innerJoin(webhookDispatch, eq(webhookDispatch.id, webhookAttempt.dispatchId))
      .where(eq(webhookDispatch.webhookId, webhookId))
      .orderBy(webhookAttempt.attempt);
  }

  async function publishOne(harness: Harness) {
    const created = await harness.call("POST", "/v3/accounts", { ...ADMIN, body: { id: "acc_alice", name: "Alice" } });
    expect(created.status).toBe(201);
    await harness.settled();
  }

  it("refuses unsafe callback URLs at registration with a problem naming the field", async () => {
    const { harness } = await setUp({ WEBHOOK_ALLOWED_HOSTS: "localhost" }, false);
    for (const [url, reason] of [
      ["https://169.254.169.254/latest/meta-data/", "link-local"],
      ["https://0xa9fea9fe/", "link-local"],
      ["https://[::ffff:10.0.0.1]/", "IPv4-mapped"],
      ["https://2130706433/", "loopback"],
      ["http://hooks.example.com/", "https:"],
      ["https://user:secret@hooks.example.com/", "credentials"],
      ["https://hooks.example.com:6379/", "port 6379"],
      ["https://metadata.google.internal/", "not allowed"],
    ]) {
      const response = await subscribe(harness, url!);
      expect(response.status, url).toBe(422);
      expect(response.body.errors, url).toEqual([{ field: "url", message: expect.stringContaining(reason!) }]);
    }
  });

  it("checks the URL again before every POST: a stored URL that breaks the rules is blocked, not sent", async () => {
    const { harness, receiver } = await setUp({ WEBHOOK_ALLOWED_HOSTS: "localhost" });
    const port = new URL(receiver.url).port;
    const created = await subscribe(harness, `http://localhost:${port}/hook`);
    expect(created.status).toBe(201);
    // The same receiver by its address, which is not on the allowlist: http and loopback are both refused.
    await harness.hooklane.database.db
      .update(webhook)
      .set({ url: `http://127.0.0.1:${port}/hook` })
      .where(eq(webhook.id, created.body.id));
    await publishOne(harness);
    const attempts = await eventually(
      () => attemptsOf(harness, created.body.id),
      (rows) => rows.length > 0,
    );
    expect(attempts[0]).toMatchObject({ attempt: 1, outcome: "blocked", errorClass: "blocked" });
    expect(receiver.posts).toEqual([]);
  });

  it("with RUNTIME_OUTBOUND_ENABLED=false sends nothing and records every attempt as blocked, on schedule", async () => {
    const { harness, receiver } = await setUp({ RUNTIME_OUTBOUND_ENABLED: "false" });
    const created = await subscribe(harness, `${receiver.url}/hook`);
    expect(created.status).toBe(201);
    await publishOne(harness);
    const [dispatch] = await eventually(
      () =>
        harness.hooklane.database.db
          .select()
          .from(webhookDispatch)
          .where(eq(webhookDispatch.webhookId, created.body.id)),
      (rows) => rows[0]?.status === "exhausted",
    );
    expect(dispatch!.attemptCount).toBe(6);
    const attempts = await attemptsOf(harness, created.body.id);
    expect(attempts.map((a) => `${a.attempt} ${a.outcome} ${a.errorClass}`)).toEqual(
      [1, 2, 3, 4, 5, 6].map((n) => `${n} blocked blocked`),
    );
    expect(receiver.posts).toEqual([]);
  });
});
