import { count, eq } from "drizzle-orm";
import { afterAll, beforeAll, expect, it } from "vitest";
import { webhookAttempt, webhookDispatch } from "../../lib/db/schema.ts";
import { startHarness, type Harness } from "../support/harness.ts";
import { createTestDatabase } from "../support/postgres.ts";
import { openDatabase } from "../../lib/db/client.ts";
import { eventually } from "../support/eventually.ts";
import { startReceiver, type TestReceiver } from "../support/receiver.ts";
import { startWorkerProcess, type WorkerProcess } from "../support/worker-process.ts";

const WEBHOOKS = 10;
const EVENTS = 200; // x 10 global webhooks = 2,000 dispatches

let harness: Harness;
let receiver: TestReceiver;
let drop: () => Promise<void>;
let databaseUrl: string;
const workers: WorkerProcess[] = [];

function startWorker(name: string): WorkerProcess {
  const worker = startWorkerProcess(name, {
    DATABASE_URL: databaseUrl,
    NODE_ENV: "test",
    WEBHOOK_ALLOWED_HOSTS: "127.0.0.1",
    WEBHOOK_BATCH_SIZE: "25",
  });
  workers.push(worker);
  return worker;
}

beforeAll(async () => {
  const created = await createTestDatabase();
  databaseUrl = created.url;
  drop = created.drop;
  receiver = await startReceiver();
  harness = await startHarness(
    async () => ({ database: await openDatabase({ databaseUrl }), databaseUrl, drop: async () => {} }),
    { lane: false },
  );
});

afterAll(async () => {
  await Promise.all(workers.map((worker) => worker.stop()));
  await harness?.close();
  await receiver?.close();
  await drop?.();
});

it("two `npm run worker` processes deliver 2,000 dispatches, none of them twice", async () => {
  for (let i = 0; i < WEBHOOKS; i++) {
    const response = await harness.call("POST", "/v3/webhooks", {
      account: "acc_ops",
      admin: true,
      body: { url: `${receiver.url}/hook/${i}`, events: ["general.address.created"], scope: "global" },
    });
    expect(response.status).toBe(201);
  }
  await Promise.all([startWorker("worker-1"), startWorker("worker-2")].map((worker) => worker.ready));

  for (let i = 0; i < EVENTS; i++) {
    const response = await harness.call("POST", "/v3/general-addresses", {
      account: "acc_alice",
      body: { line1: `${i} Main St`, city: "Lima", country: "PE" },
    });
    expect(response.status).toBe(201);
  }
  await harness.settled();
  await receiver.waitFor(WEBHOOKS * EVENTS, { timeoutMs: 60_000 });

  // Counted at the receiver: every (webhook, event) exactly once, every one a first attempt.
  const keys = receiver.posts.map((post) => `${post.path} ${post.headers["hooklane-event-id"]}`);
  expect(keys.length).toBe(2_000);
  expect(new Set(keys).size).toBe(2_000);
  expect(receiver.posts.every((post) => post.headers["hooklane-attempt"] === "1")).toBe(true);

  const { db } = harness.hooklane.database;
  // The receiver can be ahead of the ledger by one batch of records.
  await eventually(
    async () =>
      (await db.select({ n: count() }).from(webhookDispatch).where(eq(webhookDispatch.status, "success")))[0]!.n,
    (n) => n === 2_000,
  );
  const byWorker = await db
    .select({ worker: webhookAttempt.worker, n: count() })
    .from(webhookAttempt)
    .groupBy(webhookAttempt.worker);
  // Both workers took part, and between them recorded each attempt once.
  expect(byWorker.length).toBe(2);
  expect(byWorker.reduce((sum, row) => sum + row.n, 0)).toBe(2_000);
});
