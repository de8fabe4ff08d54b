import pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createApp } from "../../app/app.ts";
import { openDatabase } from "../../lib/db/client.ts";
import { startLane } from "../../lib/create-hooklane.ts";
import type { Lane } from "../../lib/webhook/transport/postgres/postgres-lane.ts";
import { eventually } from "../support/eventually.ts";
import { startHarness, type Harness } from "../support/harness.ts";
import { overdueDispatch } from "../support/overdue-dispatch.ts";
import { startReceiver, type TestReceiver } from "../support/receiver.ts";
import { startThrowawayCluster, type ThrowawayCluster } from "../support/throwaway-cluster.ts";

// The drill stops and starts PostgreSQL: it runs on a cluster of its own, as a
// role that is not a superuser, so a connection limit can keep its LISTEN session out.
let cluster: ThrowawayCluster;
let harness: Harness;
let receiver: TestReceiver;
let lane: Lane | undefined;
const OWNER = { account: "acc_ready" };

beforeAll(async () => {
  cluster = await startThrowawayCluster();
  await cluster.admin("create role lane login");
  await cluster.admin("create database hooklane owner lane");
  const databaseUrl = cluster.url("lane", "hooklane");
  receiver = await startReceiver();
  harness = await startHarness(
    async () => ({ database: await openDatabase({ databaseUrl }), databaseUrl, drop: async () => {} }),
    { lane: false, env: { READY_MAX_LAG: "2s" } },
  );
  await harness.accounts(OWNER.account);
  // The lane's LISTEN session is the listener /ready watches.
  lane = await startLane(harness.hooklane);
}, 120_000);

afterAll(async () => {
  await lane?.stop();
  await harness?.close();
  await receiver?.close();
  await cluster?.destroy();
});

const get = async (path: string) => {
  const response = await createApp(harness.hooklane).request(path);
  return { status: response.status, body: (await response.json()) as any };
};
const readyAgain = () =>
  eventually(
    () => get("/ready"),
    (answer) => answer.status === 200,
    { timeoutMs: 60_000, everyMs: 200 },
  );

it("is ready with PostgreSQL up, the lane caught up and the listener connected", async () => {
  expect(await get("/ready")).toMatchObject({
    status: 200,
    body: { status: "ready", failing: [], checks: { listener: { status: "ok", channels: 3 } } },
  });
});

it("answers 503 naming lag while the oldest due dispatch is older than READY_MAX_LAG, 200 once delivered", async () => {
  await lane!.stop();
  lane = undefined;
  await overdueDispatch(harness, { ...OWNER, url: `${receiver.url}/late`, minutes: 1 });
  const late = await get("/ready");
  expect(late).toMatchObject({ status: 503, body: { status: "unready", failing: ["lag"] } });
  expect(late.body.checks.lag.seconds).toBeGreaterThanOrEqual(60);

  lane = await startLane(harness.hooklane);
  await receiver.waitFor(1);
  expect((await readyAgain()).body.checks.lag.seconds).toBe(0);
});

it("answers 503 naming the listener while the LISTEN session is down, 200 once it is back", async () => {
  const admin = new pg.Client({ connectionString: cluster.url("postgres", "postgres") });
  await admin.connect();
  try {
    // Every connection the role holds now stays; the LISTEN session, once cut, cannot come back.
    const { rows } = await admin.query<{ n: string }>(
      "select count(*) as n from pg_stat_activity where usename = 'lane'",
    );
    await admin.query(`alter role lane connection limit ${Number(rows[0]!.n) - 1}`);
    const cut = await admin.query(
      "select pg_terminate_backend(pid) from pg_stat_activity where usename = 'lane' and query ilike 'listen %'",
    );
    expect(cut.rowCount).toBe(1);
    const down = await eventually(
      () => get("/ready"),
      (answer) => answer.status === 503,
      { everyMs: 50 },
    );
    expect(down.body).toMatchObject({ failing: ["listener"], checks: { listener: { status: "failing" } } });
    expect(down.body.checks.listener.downSince).toBeTruthy();
    expect((await get("/health")).status).toBe(200);
  } finally {
    await admin.query("alter role lane connection limit -1");
    await admin.end();
  }
  await readyAgain();
});

it("answers 503 naming the database while PostgreSQL is stopped, keeps /health at 200, and is ready again after", async () => {
  await cluster.stop();
  const down = await get("/ready");
  expect(down.status).toBe(503);
  expect(down.body.failing).toContain("database");
  expect(down.body.checks.database.status).toBe("failing");
  // Nothing about the server leaks into the public answer.
  expect(JSON.stringify(down.body)).not.toContain(String(cluster.port));
  expect(await get("/health")).toMatchObject({ status: 200, body: { status: "ok" } });

  await cluster.start();
  const back = await readyAgain();
  expect(back.body.checks).toMatchObject({ database: { status: "ok" }, listener: { status: "ok" } });
});
