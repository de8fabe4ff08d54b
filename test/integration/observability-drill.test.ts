import { randomBytes } from "node:crypto";
import { count, countDistinct, eq } from "drizzle-orm";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createApp } from "../../app/app.ts";
import { openDatabase } from "../../lib/db/client.ts";
import { webhook, webhookAttempt, webhookDispatch } from "../../lib/db/schema.ts";
import { exposeLedgerMetrics } from "../../lib/metrics/ledger-metrics.ts";
import { eventually } from "../support/eventually.ts";
import { freePort } from "../support/free-port.ts";
import { startHarness, type Harness } from "../support/harness.ts";
import { createTestDatabase } from "../support/postgres.ts";
import { parseScrape } from "../support/prometheus-text.ts";
import { startReceiver, type TestReceiver } from "../support/receiver.ts";
import { startWorkerProcess, type WorkerProcess } from "../support/worker-process.ts";

const ADMIN = { account: "acc_ops", admin: true };
const EVENTS = 10;
/** The receiver's outage: its first answers are 503s. */
const OUTAGE_POSTS = 15;
/** One line per attempt outcome, at these pino levels (debug, info, warn). */
const OUTCOME_LINES: Record<string, { level: number; status: string }> = {
  delivered: { level: 20, status: "success" },
  "attempt failed; retrying": { level: 30, status: "error" },
  "delivery exhausted: no attempt left": { level: 40, status: "exhausted" },
};

let harness: Harness;
let receiver: TestReceiver;
let worker: WorkerProcess;
let metricsPort: number;
let drop: () => Promise<void>;
// Production refuses the published development values: the worker gets keys of its own (the harness seals with the same).
const SECRET_KEY = randomBytes(32).toString("base64url");
const JWT_SECRET = randomBytes(32).toString("base64url");
// Production serves metrics to the token's holder only.
const METRICS_TOKEN = randomBytes(24).toString("base64url");
const secrets: string[] = [SECRET_KEY, JWT_SECRET, METRICS_TOKEN];

beforeAll(async () => {
  const created = await createTestDatabase();
  drop = created.drop;
  const databaseUrl = created.url;
  let posts = 0;
  receiver = await startReceiver((post) => (post.path === "/flaky" && ++posts <= OUTAGE_POSTS ? { status: 503 } : {}));
  harness = await startHarness(
    async () => ({ database: await openDatabase({ databaseUrl }), databaseUrl, drop: async () => {} }),
    { lane: false, env: { WEBHOOK_SECRET_KEY: SECRET_KEY } },
  );
  exposeLedgerMetrics(harness.hooklane);
  metricsPort = await freePort();
  // A production worker, as deployed: JSON logs, its own metrics port; at debug to see deliveries too.
  worker = startWorkerProcess("drill-worker", {
    DATABASE_URL: databaseUrl,
    NODE_ENV: "production",
    WEBHOOK_SECRET_KEY: SECRET_KEY,
    AUTH_JWT_SECRET: JWT_SECRET,
    WEBHOOK_ALLOWED_HOSTS: "127.0.0.1",
    CATALOGUE_AUTO_SYNC: "false",
    LOG_LEVEL: "debug",
    METRICS_PORT: String(metricsPort),
    METRICS_TOKEN,
    WEBHOOK_RETRY_SCHEDULE: "100ms,100ms,100ms",
    WEBHOOK_BREAKER_OPEN: "100ms,200ms",
    WEBHOOK_TIMEOUT_MS: "2000",
  });
  await worker.ready;
}, 120_000);

afterAll(async () => {
  await worker?.stop();
  await harness?.close();
  await receiver?.close();
  await drop?.();
});

it("during a receiver outage: one JSON log line per attempt outcome, at its level, with its facts and no secret; metrics that agree with the ledger", async () => {
  const closed = await startReceiver();
  await closed.close();
  const hooks: string[] = [];
  for (const url of [`${receiver.url}/flaky`, `${closed.url}/refused`]) {
    const response = await harness.call("POST", "/v3/webhooks", {
      ...ADMIN,
      body: { url, events: ["general.address.created"], scope: "global" },
    });
    expect(response.status).toBe(201);
    hooks.push(response.body.id);
    secrets.push(response.body.secret);
  }
  for (let i = 0; i < EVENTS; i++) {
    const response = await harness.call("POST", "/v3/general-addresses", {
      account: "acc_alice",
      body: { line1: `${i} Main St`, city: "Lima", country: "PE" },
    });
    expect(response.status).toBe(201);
  }
  await harness.settled();
  const { db } = harness.hooklane.database;
  const dispatches = await eventually(
    () => db.select().from(webhookDispatch),
    (rows) => rows.length === 2 * EVENTS && rows.every((row) => row.status === "success" || row.status === "exhausted"),
    { timeoutMs: 90_000 },
  );
  // The outage ended: every delivery to the flaky receiver arrived; the refused one gave up.
  expect(dispatches.filter((d) => d.webhookId === hooks[0]).every((d) => d.status === "success")).toBe(true);
  expect(dispatches.filter((d) => d.webhookId === hooks[1]).every((d) => d.status === "exhausted")).toBe(true);
  const attempts = await db.select().from(webhookAttempt);
  const webhookOf = new Map(dispatches.map((d) => [d.id, d.webhookId]));

  // --- Logs (acceptance 2) ---
  const text = await eventually(
    async () => worker.stdout(),
    // The last records' lines follow their statement.
    (out) =>
      out.split("\n").filter((line) => line.includes('"dispatchId"') && line.includes('"attempt"')).length >=
      attempts.length,
  );
  const lines = text.split("\n").filter(Boolean);
  const parsed = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
  const outcomeLines = parsed.filter((line) => typeof line.msg === "string" && line.msg in OUTCOME_LINES);
  expect(outcomeLines).toHaveLength(attempts.length);
  const byKey = new Map(outcomeLines.map((line) => [`${line.dispatchId}/${line.attempt}`, line]));
  expect(byKey.size).toBe(attempts.length);
  for (const attempt of attempts) {
    const line = byKey.get(`${attempt.dispatchId}/${attempt.attempt}`);
    expect(line, `${attempt.dispatchId}/${attempt.attempt}`).toBeDefined();
    const expected = OUTCOME_LINES[line!.msg as string]!;
    expect(line).toMatchObject({
      level: expected.level,
      webhookId: webhookOf.get(attempt.dispatchId),
      dispatchId: attempt.dispatchId,
      attempt: attempt.attempt,
      outcome: attempt.outcome,
      errorClass: attempt.errorClass,
    });
  }
  const levels = new Set(outcomeLines.map((line) => line.level));
  expect(levels).toEqual(new Set([20, 30, 40]));
  const sealed = await db.select({ a: webhook.secretSealed }).from(webhook);
  for (const secret of [...secrets, ...sealed.map((row) => row.a)]) expect(text).not.toContain(secret);
  expect(text).not.toContain("whsec_");

  // --- Metrics (acceptance 1) ---
  expect((await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).status).toBe(401);
  const workerScrape = await fetch(`http://127.0.0.1:${metricsPort}/metrics`, {
    headers: { authorization: `Bearer ${METRICS_TOKEN}` },
  });
  expect(workerScrape.status).toBe(200);
  const workerMetrics = parseScrape(await workerScrape.text());
  const apiMetrics = parseScrape(await (await createApp(harness.hooklane).request("/metrics")).text());

  const byOutcome = await db
    .select({ outcome: webhookAttempt.outcome, n: count() })
    .from(webhookAttempt)
    .groupBy(webhookAttempt.outcome);
  expect(byOutcome.map((row) => row.outcome).sort()).toEqual(["failed", "retry", "success"]);
  for (const { outcome, n } of byOutcome) {
    expect(workerMetrics.value("hooklane_attempts_total", { outcome }), outcome).toBe(n);
  }
  expect(workerMetrics.value("hooklane_attempts_total")).toBe(attempts.length);
  const [events] = await db.select({ n: countDistinct(webhookDispatch.eventId) }).from(webhookDispatch);
  expect(events!.n).toBe(EVENTS);
  expect(apiMetrics.value("hooklane_publish_total", { result: "published" })).toBe(EVENTS);
  expect(workerMetrics.value("hooklane_route_messages_total", { outcome: "routed" })).toBe(EVENTS);
  expect(workerMetrics.value("hooklane_dispatches_created_total")).toBe(2 * EVENTS);
  expect(workerMetrics.value("hooklane_breaker_opened_total")).toBeGreaterThan(0);
  expect(apiMetrics.value("hooklane_deliver_backlog")).toBe(0);
  expect(apiMetrics.value("hooklane_workers_live")).toBe(1);
  expect(apiMetrics.value("hooklane_ledger_up")).toBe(1);
  // The API process runs no lane; the worker reads no ledger.
  expect(apiMetrics.value("hooklane_attempts_total") ?? 0).toBe(0);
  expect(workerMetrics.value("hooklane_deliver_backlog")).toBeUndefined();
  // The worker's own port also answers its probes.
  expect((await fetch(`http://127.0.0.1:${metricsPort}/ready`)).status).toBe(200);
});
