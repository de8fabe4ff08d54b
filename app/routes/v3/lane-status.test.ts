import { count, eq, sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { webhookAttempt, webhookDispatch } from "../../../lib/db/schema.ts";
import { eventually } from "../../../test/support/eventually.ts";
import { HARNESS_START_MS, pgliteFactory, startHarness, type Harness } from "../../../test/support/harness.ts";
import { startReceiver, type TestReceiver } from "../../../test/support/receiver.ts";
import { laneStatusSchema } from "./lane-status.ts";

const ADMIN = { account: "acc_ops", admin: true };
const OWNER = { account: "acc_lane" };

describe("GET /v3/lane", () => {
  let harness: Harness;
  let receiver: TestReceiver;

  beforeAll(async () => {
    receiver = await startReceiver();
    harness = await startHarness(pgliteFactory);
    await harness.accounts(OWNER.account);
  }, HARNESS_START_MS);
  afterAll(async () => {
    await harness?.close();
    await receiver?.close();
  });

  const lane = async () => {
    const response = await harness.call("GET", "/v3/lane", ADMIN);
    expect(response.status).toBe(200);
    return laneStatusSchema.parse(response.body);
  };
  const subscribe = async (path: string) =>
    (await harness.call("POST", "/v3/webhooks", { ...OWNER, body: { url: `${receiver.url}${path}`, events: ["*"] } }))
      .body.id as string;
  const sendTests = async (id: string, n: number) => {
    for (let i = 0; i < n; i++) await harness.call("POST", `/v3/webhooks/${id}/test`, OWNER);
  };

  it("is for admins only", async () => {
    const response = await harness.call("GET", "/v3/lane", OWNER);
    expect(response.status).toBe(403);
    expect(JSON.stringify(response.body)).not.toContain("workers");
  });

  it("reports the backlog, the live worker, lost workers and the throughput", async () => {
    const { database } = harness.hooklane;
    const delivered = await subscribe("/ok");
    const paused = await subscribe("/paused");
    await harness.call("PATCH", `/v3/webhooks/${paused}`, { ...OWNER, body: { status: "paused" } });
    await sendTests(paused, 3);
    await sendTests(delivered, 4);
    await eventually(
      () => database.db.select().from(webhookDispatch).where(eq(webhookDispatch.webhookId, delivered)),
      (rows) => rows.length === 4 && rows.every((row) => row.status === "success"),
    );
    // A worker that died without draining five minutes ago.
    await database.rows(sql`
      insert into webhook_worker (id, started_at, heartbeat_at) values ('gone/1/abc', now() - interval '1 hour', now() - interval '5 minutes')`);

    // The heartbeat reports the last claim every few seconds.
    const status = await eventually(
      () => lane(),
      (s) => s.workers[0]?.lastClaim != null,
    );
    expect(status).toMatchObject({
      object: "lane",
      transport: "postgres",
      deliver: {
        pending: 3,
        error: 0,
        due: 3,
        inFlight: 0,
        heldInactive: 3,
        heldBreaker: 0,
        heldConsent: 0,
        lagSeconds: 0,
      },
      route: { due: 0, scheduled: 0, inFlight: 0, lagSeconds: 0 },
      webhooks: { active: 1, paused: 1, disabled: 0 },
      breakers: { open: 0, halfOpen: 0 },
      recoveries: { pending: 0, running: 0 },
      poisonMessages: 0,
    });
    expect(status.workers.map((w) => w.id)).toEqual([harness.lane!.workerId]);
    expect(status.lostWorkers.map((w) => w.id)).toEqual(["gone/1/abc"]);
    const [attempts] = await database.db.select({ n: count() }).from(webhookAttempt);
    expect(status.throughput.recent.attempts).toBe(attempts!.n);
    expect(status.throughput.recent.succeeded).toBe(4);
    expect(status.throughput.minutes.reduce((sum, m) => sum + m.attempts, 0)).toBe(attempts!.n);
  });
});
