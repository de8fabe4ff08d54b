import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startLane } from "../../../lib/create-hooklane.ts";
import type { Lane } from "../../../lib/webhook/transport/postgres/postgres-lane.ts";
import { eventually } from "../../../test/support/eventually.ts";
import { overdueDispatch } from "../../../test/support/overdue-dispatch.ts";
import { HARNESS_START_MS, pgliteFactory, startHarness, type Harness } from "../../../test/support/harness.ts";
import { startReceiver, type TestReceiver } from "../../../test/support/receiver.ts";
import { createApp } from "../../app.ts";

const OWNER = { account: "acc_ready" };

describe("GET /health and GET /ready", () => {
  let harness: Harness;
  let receiver: TestReceiver;
  let lane: Lane | undefined;

  beforeAll(async () => {
    receiver = await startReceiver();
    harness = await startHarness(pgliteFactory, { lane: false, env: { READY_MAX_LAG: "1m" } });
    await harness.accounts(OWNER.account);
  }, HARNESS_START_MS);
  afterAll(async () => {
    await lane?.stop();
    await harness?.close();
    await receiver?.close();
  });

  const get = async (path: string) => {
    const response = await createApp(harness.hooklane).request(path);
    return { status: response.status, body: (await response.json()) as any };
  };

  it("answers /health from memory, without a statement", async () => {
    const before = harness.hooklane.database.queryCount;
    const health = await get("/health");
    expect(health).toMatchObject({ status: 200, body: { status: "ok", database: "pglite" } });
    expect(harness.hooklane.database.queryCount).toBe(before);
  });

  it("is ready with every check passing", async () => {
    expect(await get("/ready")).toMatchObject({
      status: 200,
      body: {
        status: "ready",
        failing: [],
        checks: {
          database: { status: "ok" },
          migrations: { status: "ok" },
          lag: { status: "ok", seconds: 0, thresholdSeconds: 60 },
          listener: { status: "ok" },
        },
      },
    });
  });

  it("shares one read among probes that come together", async () => {
    const { database } = harness.hooklane;
    const before = database.queryCount;
    await get("/ready");
    const oneRead = database.queryCount - before;
    expect(oneRead).toBeGreaterThan(0);
    const flood = database.queryCount;
    const answers = await Promise.all(Array.from({ length: 50 }, () => get("/ready")));
    expect(answers.every((answer) => answer.status === 200)).toBe(true);
    expect(database.queryCount - flood).toBe(oneRead);
  });

  it("answers 503 naming lag while a due dispatch waits longer than READY_MAX_LAG, and 200 once the lane caught up", async () => {
    // No lane runs: the dispatch has been due for ten minutes.
    const { webhookId } = await overdueDispatch(harness, { ...OWNER, url: `${receiver.url}/late`, minutes: 10 });
    const late = await get("/ready");
    expect(late).toMatchObject({
      status: 503,
      body: { status: "unready", failing: ["lag"], checks: { lag: { status: "failing", thresholdSeconds: 60 } } },
    });
    expect(late.body.checks.lag.seconds).toBeGreaterThanOrEqual(600);
    expect((await get("/health")).status).toBe(200);

    // A paused webhook's events wait on purpose: they are not lag.
    await harness.call("PATCH", `/v3/webhooks/${webhookId}`, { ...OWNER, body: { status: "paused" } });
    expect((await get("/ready")).status).toBe(200);
    await harness.call("PATCH", `/v3/webhooks/${webhookId}`, { ...OWNER, body: { status: "active" } });
    expect((await get("/ready")).status).toBe(503);

    lane = await startLane(harness.hooklane);
    await receiver.waitFor(1);
    const ready = await eventually(
      () => get("/ready"),
      (answer) => answer.status === 200,
    );
    expect(ready.body.checks.lag.seconds).toBe(0);
  });

  it("answers 503 naming migrations when the database is behind the build", async () => {
    const { database } = harness.hooklane;
    const [last] = await database.rows<{ id: number; hash: string; created_at: string }>(
      sql`select id, hash, created_at from drizzle.__drizzle_migrations order by created_at desc limit 1`,
    );
    await database.rows(sql`delete from drizzle.__drizzle_migrations where id = ${last!.id}`);
    try {
      expect(await get("/ready")).toMatchObject({
        status: 503,
        body: { failing: ["migrations"], checks: { migrations: { status: "failing" } } },
      });
    } finally {
      await database.rows(sql`
        insert into drizzle.__drizzle_migrations (id, hash, created_at) values (${last!.id}, ${last!.hash}, ${last!.created_at})`);
    }
    expect((await get("/ready")).status).toBe(200);
  });
});
