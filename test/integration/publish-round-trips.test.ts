import { count, eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { paymentDebt, webhookRouteJob } from "../../lib/db/schema.ts";
import { startHarness, type Harness } from "../support/harness.ts";
import { postgresFactory, testDatabaseUrl } from "../support/postgres.ts";
import { countSocketWrites } from "../support/socket-writes.ts";

const ADMIN = { account: "acc_ops", admin: true };
const DEBT = { account: "acc_alice", body: { amount: "42.00", currency: "EUR" } };

// A create whose 2xx publishes writes its event ahead of its last statements, and COMMIT goes with them: BEGIN, the
// account check, the insert, the route message and COMMIT leave in one write to PostgreSQL. With nobody listening the
// check and the insert still leave together, in a transaction of their own.
describe("what a publishing create costs in writes to PostgreSQL", () => {
  const port = Number(new URL(testDatabaseUrl()).port || 5432);
  let publishing: Harness;
  let off: Harness;

  beforeAll(async () => {
    [publishing, off] = await Promise.all([
      startHarness(postgresFactory, { lane: false }),
      startHarness(postgresFactory, { lane: false, env: { ENABLE_API_EVENT_QUEUE: "false" } }),
    ]);
    for (const harness of [publishing, off]) {
      await harness.accounts("acc_alice");
      const hook = await harness.call("POST", "/v3/webhooks", {
        account: "acc_alice",
        body: { url: "http://127.0.0.1:8443/hook", events: ["payment-debt.created"] },
      });
      expect(hook.status, JSON.stringify(hook.body)).toBe(201);
      // Each pooled connection prepares the named statements on its first use; these calls warm one up.
      expect((await harness.call("POST", "/v3/payment-debts", DEBT)).status).toBe(201);
    }
    await publishing.settled();
  }, 90_000);
  afterAll(async () => {
    await Promise.all([publishing?.close(), off?.close()]);
  });

  const routeJobs = async (harness: Harness) =>
    harness.hooklane.database.db.select({ message: webhookRouteJob.message }).from(webhookRouteJob);
  const debts = async (harness: Harness) =>
    (await harness.hooklane.database.db.select({ n: count() }).from(paymentDebt))[0]!.n;

  /** Calls the API and counts the writes to PostgreSQL the call made. */
  async function writesOf(harness: Harness, call: () => Promise<{ status: number; body: unknown }>) {
    const writes = countSocketWrites(port);
    try {
      const answer = await call();
      await harness.settled();
      return { answer, writes: writes.count() };
    } finally {
      writes.stop();
    }
  }

  it("publishes a create in one write: the row and its route message, committed together", async () => {
    const before = (await routeJobs(publishing)).length;
    const { answer, writes } = await writesOf(publishing, () => publishing.call("POST", "/v3/payment-debts", DEBT));
    expect(answer.status, JSON.stringify(answer.body)).toBe(201);
    expect(writes).toBe(1);
    const id = (answer.body as { id: string }).id;
    expect(id).toMatch(/^pd_[0-9a-f]{32}$/);
    const [row] = await publishing.hooklane.database.db.select().from(paymentDebt).where(eq(paymentDebt.id, id));
    expect(row?.account).toBe("acc_alice");
    const jobs = await routeJobs(publishing);
    expect(jobs).toHaveLength(before + 1);
    expect(jobs.map((job) => job.message)).toContainEqual(
      expect.objectContaining({ type: "payment-debt.created", resourceId: id, account: "acc_alice" }),
    );
  });

  it("answers 422 for an account that does not exist, in that one write, with nothing committed", async () => {
    const [jobsBefore, debtsBefore] = [(await routeJobs(publishing)).length, await debts(publishing)];
    const { answer, writes } = await writesOf(publishing, () =>
      publishing.call("POST", "/v3/payment-debts", { ...ADMIN, body: { ...DEBT.body, account: "acc_nobody" } }),
    );
    expect(answer.status).toBe(422);
    expect(writes).toBe(1);
    expect((await routeJobs(publishing)).length).toBe(jobsBefore);
    expect(await debts(publishing)).toBe(debtsBefore);
  });

  it("publishes an idempotent create after its statements, as before: the answer is stored in the same commit", async () => {
    const before = (await routeJobs(publishing)).length;
    const headers = { "idempotency-key": "publish-round-trips-1" };
    const { answer, writes } = await writesOf(publishing, () =>
      publishing.call("POST", "/v3/payment-debts", { ...DEBT, headers }),
    );
    expect(answer.status).toBe(201);
    expect(writes).toBeGreaterThan(1);
    const id = (answer.body as { id: string }).id;
    expect((await routeJobs(publishing)).map((job) => job.message)).toContainEqual(
      expect.objectContaining({ resourceId: id }),
    );
    expect((await routeJobs(publishing)).length).toBe(before + 1);
    // Its replay publishes nothing more.
    const replay = await publishing.call("POST", "/v3/payment-debts", { ...DEBT, headers });
    expect(replay.body).toEqual(answer.body);
    expect((await routeJobs(publishing)).length).toBe(before + 1);
  });

  it("with the flag off, sends the check and the insert in one write too, in a transaction of their own", async () => {
    const { answer, writes } = await writesOf(off, () => off.call("POST", "/v3/payment-debts", DEBT));
    expect(answer.status).toBe(201);
    expect(writes).toBe(1);
    expect(await routeJobs(off)).toHaveLength(0);
    const debtsBefore = await debts(off);
    const missing = await writesOf(off, () =>
      off.call("POST", "/v3/payment-debts", { ...ADMIN, body: { ...DEBT.body, account: "acc_nobody" } }),
    );
    expect(missing.answer.status).toBe(422);
    expect(missing.writes).toBe(1);
    expect(await debts(off)).toBe(debtsBefore);
  });

  it("on the vercel transport, writes the outbox row after the statements: its owner is read from the new row", async () => {
    const vercel = await startHarness(postgresFactory, { lane: false, driver: "vercel" });
    try {
      await vercel.accounts("acc_alice");
      const hook = await vercel.call("POST", "/v3/webhooks", {
        account: "acc_alice",
        body: { url: "http://127.0.0.1:8443/hook", events: ["payment-debt.created"] },
      });
      expect(hook.status, JSON.stringify(hook.body)).toBe(201);
      const created = await vercel.call("POST", "/v3/payment-debts", DEBT);
      expect(created.status).toBe(201);
      await vercel.settled();
      // The row is written at once (the forward needs its id), so the message is not written ahead of the insert.
      const forwarded = vercel.queue!.messages.map((m) => JSON.parse(new TextDecoder().decode(m.body)));
      expect(forwarded).toContainEqual(
        expect.objectContaining({ resourceId: (created.body as { id: string }).id, account: "acc_alice" }),
      );
    } finally {
      await vercel.close();
    }
  });
});
