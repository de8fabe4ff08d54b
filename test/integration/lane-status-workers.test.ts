import { eq } from "drizzle-orm";
import { afterAll, beforeAll, expect, it } from "vitest";
import { laneStatusSchema } from "../../app/routes/v3/lane-status.ts";
import { openDatabase } from "../../lib/db/client.ts";
import { webhookDispatch } from "../../lib/db/schema.ts";
import { eventually } from "../support/eventually.ts";
import { startHarness, type Harness } from "../support/harness.ts";
import { createTestDatabase } from "../support/postgres.ts";
import { startReceiver, type TestReceiver } from "../support/receiver.ts";
import { startWorkerProcess, type WorkerProcess } from "../support/worker-process.ts";

const ADMIN = { account: "acc_ops", admin: true };
const OWNER = { account: "acc_lane" };
// Short leases: a killed worker's heartbeat expires within two seconds.
const LEASE = { WEBHOOK_LEASE_MS: "2000" };

let harness: Harness;
let receiver: TestReceiver;
let drop: () => Promise<void>;
const workers: WorkerProcess[] = [];

beforeAll(async () => {
  const created = await createTestDatabase();
  drop = created.drop;
  const databaseUrl = created.url;
  receiver = await startReceiver();
  harness = await startHarness(
    async () => ({ database: await openDatabase({ databaseUrl }), databaseUrl, drop: async () => {} }),
    { lane: false, env: LEASE },
  );
  await harness.accounts(OWNER.account);
  for (const name of ["lane-worker-1", "lane-worker-2"]) {
    workers.push(
      startWorkerProcess(name, {
        DATABASE_URL: databaseUrl,
        NODE_ENV: "test",
        WEBHOOK_ALLOWED_HOSTS: "127.0.0.1",
        ...LEASE,
      }),
    );
  }
  await Promise.all(workers.map((worker) => worker.ready));
}, 120_000);

afterAll(async () => {
  await Promise.all(workers.map((worker) => worker.stop()));
  await harness?.close();
  await receiver?.close();
  await drop?.();
});

const lane = async () => {
  const response = await harness.call("GET", "/v3/lane", ADMIN);
  expect(response.status).toBe(200);
  return laneStatusSchema.parse(response.body);
};
const workerIds = (output: string) => /lane worker (\S+) started/.exec(output)?.[1];

it("reports the backlog and both live workers, and drops a SIGKILLed worker once its heartbeat expires", async () => {
  const subscribe = async (path: string) =>
    (await harness.call("POST", "/v3/webhooks", { ...OWNER, body: { url: `${receiver.url}${path}`, events: ["*"] } }))
      .body.id as string;
  const active = await subscribe("/active");
  const paused = await subscribe("/paused");
  await harness.call("PATCH", `/v3/webhooks/${paused}`, { ...OWNER, body: { status: "paused" } });
  for (let i = 0; i < 5; i++) await harness.call("POST", `/v3/webhooks/${paused}/test`, OWNER);
  for (let i = 0; i < 20; i++) await harness.call("POST", `/v3/webhooks/${active}/test`, OWNER);
  await eventually(
    () => harness.hooklane.database.db.select().from(webhookDispatch).where(eq(webhookDispatch.webhookId, active)),
    (rows) => rows.length === 20 && rows.every((row) => row.status === "success"),
  );

  const ids = workers.map((worker) => workerIds(worker.stdout()));
  // Heartbeats report the last claim every few seconds.
  const both = await eventually(
    () => lane(),
    (status) => status.workers.some((w) => w.lastClaim !== null),
  );
  expect(both.workers.map((w) => w.id).sort()).toEqual([...ids].sort());
  expect(both.deliver).toMatchObject({ pending: 5, error: 0, due: 5, inFlight: 0, heldInactive: 5, lagSeconds: 0 });
  expect(both.throughput.recent.succeeded).toBe(20);

  const [victim, survivor] = workers as [WorkerProcess, WorkerProcess];
  await victim.kill();
  const after = await eventually(
    () => lane(),
    (status) => status.workers.length === 1,
    { timeoutMs: 30_000, everyMs: 250 },
  );
  expect(after.workers.map((w) => w.id)).toEqual([workerIds(survivor.stdout())]);
  expect(after.lostWorkers.map((w) => w.id)).toEqual([workerIds(victim.stdout())]);
  expect(after.deliver).toMatchObject({ pending: 5, heldInactive: 5 });
});
