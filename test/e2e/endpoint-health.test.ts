import { eq, sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { webhookHealthSchema } from "../../app/routes/v3/webhook-health.ts";
import { webhookDispatch } from "../../lib/db/schema.ts";
import { eventToOneWebhook } from "../support/event-to-one-webhook.ts";
import { eventually } from "../support/eventually.ts";
import { HARNESS_START_MS, pgliteFactory, startHarness, type Harness } from "../support/harness.ts";
import { startReceiver, type TestReceiver } from "../support/receiver.ts";

const OWNER = { account: "acc_health" };
const HEALTHY_EVENTS = 60;

describe("per-endpoint health: GET /v3/webhooks/:id/health", () => {
  let harness: Harness;
  let receiver: TestReceiver;
  let refusedUrl: string;
  // Answer times spread over 2..90 ms, the same sequence every run.
  let seed = 7;
  const nextDelay = () => 2 + ((seed = (seed * 48_271) % 2_147_483_647) % 89);

  beforeAll(async () => {
    receiver = await startReceiver((post) =>
      post.path === "/failing" ? { status: 500, body: "upstream exploded" } : { delayMs: nextDelay() },
    );
    const closed = await startReceiver();
    refusedUrl = `${closed.url}/refused`;
    await closed.close();
    harness = await startHarness(pgliteFactory, {
      // Three attempts 50 ms apart; a breaker that, once open, stays open for the test's length.
      env: { WEBHOOK_RETRY_SCHEDULE: "50ms,50ms", WEBHOOK_BREAKER_OPEN: "1h,1h", WEBHOOK_TIMEOUT_MS: "5000" },
    });
    await harness.accounts(OWNER.account, "acc_other");
  }, HARNESS_START_MS);
  afterAll(async () => {
    await harness?.close();
    await receiver?.close();
  });

  const subscribe = async (url: string) =>
    (await harness.call("POST", "/v3/webhooks", { ...OWNER, body: { url, events: ["*"] } })).body.id as string;
  // Real events, one webhook's each: test events count toward no endpoint's health.
  const sendEvents = async (id: string, count: number) => {
    for (let i = 0; i < count; i++) await eventToOneWebhook(harness, id);
  };
  const settled = (id: string, count: number) =>
    eventually(
      () => harness.hooklane.database.db.select().from(webhookDispatch).where(eq(webhookDispatch.webhookId, id)),
      (rows) => rows.length === count && rows.every((row) => row.status === "success" || row.status === "exhausted"),
      { timeoutMs: 60_000 },
    );
  const health = async (id: string) => {
    const response = await harness.call("GET", `/v3/webhooks/${id}/health`, OWNER);
    expect(response.status).toBe(200);
    return webhookHealthSchema.parse(response.body);
  };
  /** What the attempt log itself says, for comparison. */
  const attemptLog = async (id: string) => {
    const [row] = await harness.hooklane.database.rows<{
      attempts: number | string;
      succeeded: number | string;
      p50: number;
      p95: number;
    }>(sql`
      select count(*) as attempts, count(*) filter (where a.outcome = 'success') as succeeded,
        percentile_disc(0.5) within group (order by a.duration_ms) as p50,
        percentile_disc(0.95) within group (order by a.duration_ms) as p95
      from webhook_attempt a join webhook_dispatch d on d.id = a.dispatch_id where d.webhook_id = ${id}
    `);
    return { attempts: Number(row!.attempts), succeeded: Number(row!.succeeded), p50: row!.p50, p95: row!.p95 };
  };

  it("shows a healthy endpoint's p50 and p95 within 10 % of the attempt log", async () => {
    const id = await subscribe(`${receiver.url}/healthy`);
    await sendEvents(id, HEALTHY_EVENTS);
    await settled(id, HEALTHY_EVENTS);
    const log = await attemptLog(id);
    const seen = await health(id);
    expect(seen).toMatchObject({
      verdict: "healthy",
      attempts: HEALTHY_EVENTS,
      succeeded: HEALTHY_EVENTS,
      successRate: 1,
      failuresInARow: 0,
      lastError: null,
      lastStatusCode: 200,
      backlog: { pending: 0, error: 0, inFlight: 0 },
      nextAttempt: null,
      breaker: { state: "closed", failures: 0, openUntil: null },
    });
    expect(log.attempts).toBe(HEALTHY_EVENTS);
    expect(log.p95).toBeGreaterThan(log.p50);
    expect(Math.abs(seen.latencyMs!.p50 - log.p50) / log.p50).toBeLessThanOrEqual(0.1);
    expect(Math.abs(seen.latencyMs!.p95 - log.p95) / log.p95).toBeLessThanOrEqual(0.1);
  });

  it("shows an endpoint that answers 500 to everything as failing, with its last error", async () => {
    const id = await subscribe(`${receiver.url}/failing`);
    await sendEvents(id, 4);
    await settled(id, 4);
    const log = await attemptLog(id);
    expect(log).toMatchObject({ attempts: 12, succeeded: 0 });
    expect(await health(id)).toMatchObject({
      verdict: "failing",
      attempts: 12,
      succeeded: 0,
      successRate: 0,
      failuresInARow: 12,
      lastStatusCode: 500,
      lastError: expect.stringMatching(/^http_status: .*500/),
      // An HTTP answer is an answer: the breaker stays closed.
      breaker: { state: "closed", failures: 0, openUntil: null },
      backlog: { pending: 0, error: 0, inFlight: 0 },
    });
  });

  it("shows an unreachable endpoint's open breaker, its waiting deliveries and when the next attempt comes", async () => {
    const id = await subscribe(refusedUrl);
    await sendEvents(id, 3);
    // Five refused connections open the breaker; the rest wait for its probe, an hour away.
    const seen = await eventually(
      () => health(id),
      (h) => h.breaker.state === "open" && h.backlog.inFlight === 0,
    );
    const log = await attemptLog(id);
    expect(log.succeeded).toBe(0);
    expect(seen).toMatchObject({
      verdict: "failing",
      attempts: log.attempts,
      succeeded: 0,
      successRate: 0,
      failuresInARow: log.attempts,
      lastStatusCode: null,
      lastError: expect.stringMatching(/^connection_refused: /),
      breaker: { state: "open" },
    });
    expect(seen.breaker.failures).toBeGreaterThanOrEqual(5);
    expect(seen.backlog.pending + seen.backlog.error).toBeGreaterThan(0);
    // Deliveries wait for the breaker: the next attempt is its probe.
    expect(seen.nextAttempt).toBe(seen.breaker.openUntil);
    expect(new Date(seen.nextAttempt!).getTime()).toBeGreaterThan(Date.now() + 30 * 60_000);
  });

  it("is idle before any attempt, and 404 for another account", async () => {
    const id = await subscribe(`${receiver.url}/quiet`);
    await harness.call("PATCH", `/v3/webhooks/${id}`, { ...OWNER, body: { status: "paused" } });
    await sendEvents(id, 2);
    expect(await health(id)).toMatchObject({
      verdict: "idle",
      attempts: 0,
      successRate: null,
      latencyMs: null,
      lastAttempt: null,
      backlog: { pending: 2, error: 0, inFlight: 0 },
      // Paused: its events are kept, and nothing is due to go.
      nextAttempt: null,
    });
    expect((await harness.call("GET", `/v3/webhooks/${id}/health`, { account: "acc_other" })).status).toBe(404);
  });
});
