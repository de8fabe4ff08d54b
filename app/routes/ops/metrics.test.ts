import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { count, eq, sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../../lib/config/env.ts";
import { webhookAttempt, webhookDispatch, webhookPoisonMessage } from "../../../lib/db/schema.ts";
import { ROUTE_WAKE_CHANNEL } from "../../../lib/db/sql/route-jobs.ts";
import { exposeLedgerMetrics } from "../../../lib/metrics/ledger-metrics.ts";
import { eventually } from "../../../test/support/eventually.ts";
import { HARNESS_START_MS, pgliteFactory, startHarness, type Harness } from "../../../test/support/harness.ts";
import { parseScrape } from "../../../test/support/prometheus-text.ts";
import { startReceiver, type TestReceiver } from "../../../test/support/receiver.ts";
import { createApp } from "../../app.ts";

const TOKEN = "metrics-token-for-the-test";
const ADMIN = { account: "acc_ops", admin: true };
const EVENTS = 12;

describe("GET /metrics", () => {
  let harness: Harness;
  let receiver: TestReceiver;

  beforeAll(async () => {
    // Every third POST fails once with a 503, so attempts have more than one outcome.
    let posts = 0;
    receiver = await startReceiver(() => (++posts % 3 === 0 ? { status: 503 } : {}));
    harness = await startHarness(pgliteFactory, { env: { METRICS_TOKEN: TOKEN } });
    exposeLedgerMetrics(harness.hooklane);
  }, HARNESS_START_MS);
  afterAll(async () => {
    await harness?.close();
    await receiver?.close();
  });

  const scrape = async (headers: Record<string, string> = { authorization: `Bearer ${TOKEN}` }) =>
    createApp(harness.hooklane).request("/metrics", { headers });

  it("exposes counters that agree with the ledger, and the ledger's gauges, in the text format", async () => {
    const { database } = harness.hooklane;
    const hook = await harness.call("POST", "/v3/webhooks", {
      ...ADMIN,
      body: { url: `${receiver.url}/hook`, events: ["general.address.created"], scope: "global" },
    });
    expect(hook.status).toBe(201);
    for (let i = 0; i < EVENTS; i++) {
      const created = await harness.call("POST", "/v3/general-addresses", {
        account: "acc_alice",
        body: { line1: `${i} Main St`, city: "Lima", country: "PE" },
      });
      expect(created.status).toBe(201);
    }
    // Nobody listens to payment debts: counted as unsubscribed, and nothing is written.
    await harness.call("POST", "/v3/accounts", { ...ADMIN, body: { id: "acc_alice", name: "Alice" } });
    await harness.call("POST", "/v3/payment-debts", {
      account: "acc_alice",
      body: { amount: "1.00", currency: "EUR" },
    });
    // And one poison message.
    await database.rows(sql`
      with job as (insert into webhook_route_job (message) values ('{"not":"a message"}'::jsonb) returning id)
      select pg_notify(${ROUTE_WAKE_CHANNEL}, '') from job`);
    await harness.settled();
    await eventually(
      () => database.db.select().from(webhookDispatch).where(eq(webhookDispatch.webhookId, hook.body.id)),
      (rows) => rows.length === EVENTS && rows.every((row) => row.status === "success"),
    );
    await eventually(
      () => database.db.select({ n: count() }).from(webhookPoisonMessage),
      ([row]) => row!.n === 1,
    );

    const response = await scrape();
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
    const metrics = parseScrape(await response.text());

    const byOutcome = await database.db
      .select({ outcome: webhookAttempt.outcome, n: count() })
      .from(webhookAttempt)
      .groupBy(webhookAttempt.outcome);
    expect(byOutcome.length).toBeGreaterThan(1);
    for (const { outcome, n } of byOutcome) expect(metrics.value("hooklane_attempts_total", { outcome })).toBe(n);
    expect(metrics.value("hooklane_attempts_total")).toBe(byOutcome.reduce((sum, row) => sum + row.n, 0));
    expect(metrics.value("hooklane_attempts_total", { outcome: "retry", error_class: "http_status" })).toBeGreaterThan(
      0,
    );
    expect(metrics.count("hooklane_attempt_duration_seconds")).toBe(metrics.value("hooklane_attempts_total"));
    expect(metrics.count("hooklane_delivery_lag_seconds")).toBe(EVENTS);

    expect(metrics.value("hooklane_publish_total", { result: "published" })).toBe(EVENTS);
    expect(metrics.value("hooklane_publish_total", { result: "unsubscribed" })).toBeGreaterThanOrEqual(1);
    expect(metrics.value("hooklane_publish_total", { result: "failed" })).toBe(0);
    expect(metrics.value("hooklane_route_messages_total", { outcome: "routed" })).toBe(EVENTS);
    expect(metrics.value("hooklane_route_messages_total", { outcome: "poison" })).toBe(1);
    expect(metrics.value("hooklane_dispatches_created_total")).toBe(EVENTS);

    // What the ledger holds, read on scrape.
    expect(metrics.value("hooklane_ledger_up")).toBe(1);
    expect(metrics.value("hooklane_deliver_backlog")).toBe(0);
    expect(metrics.value("hooklane_lane_lag_seconds")).toBe(0);
    expect(metrics.value("hooklane_poison_messages")).toBe(1);
    expect(metrics.value("hooklane_webhooks", { status: "active" })).toBe(1);
    expect(metrics.value("hooklane_breakers", { state: "open" })).toBe(0);
    expect(metrics.value("hooklane_recovery_jobs")).toBe(0);
    expect(metrics.value("hooklane_workers_live")).toBe(1);
    expect(metrics.value("hooklane_worker_concurrency")).toBe(harness.hooklane.config.concurrency);
    expect(metrics.value("hooklane_database_up")).toBe(1);
    expect(metrics.value("hooklane_listener_up")).toBe(1);
    // Node's own, once.
    expect(metrics.type("process_cpu_user_seconds_total")).toBe("COUNTER");
    expect(metrics.names.filter((name) => name === "process_cpu_user_seconds_total")).toHaveLength(1);

    // Bounded labels: never an id of a webhook, dispatch, event or account.
    for (const name of metrics.names.filter((n) => n.startsWith("hooklane_"))) {
      for (const labels of metrics.labels(name)) {
        expect(JSON.stringify(labels), name).not.toMatch(/wh_|wd_|evt_|acc_/);
      }
    }
  });

  it("serves every metric the Grafana dashboard in docs/ queries", async () => {
    const dashboard = JSON.parse(
      readFileSync(new URL("../../../docs/grafana-dashboard.json", import.meta.url), "utf8"),
    );
    const queried = new Set<string>();
    for (const panel of dashboard.panels as { targets?: { expr: string }[] }[]) {
      for (const target of panel.targets ?? []) {
        for (const [name] of target.expr.matchAll(/\b(?:hooklane|process|nodejs)_[a-z0-9_]+/g)) {
          queried.add(name.replace(/_(bucket|sum|count)$/, ""));
        }
      }
    }
    expect(queried.size).toBeGreaterThan(20);
    const exposed = parseScrape(await (await scrape()).text()).names;
    expect([...queried].filter((name) => !exposed.includes(name))).toEqual([]);
  });

  it("answers 401 without the token or with a wrong one, and 404 when metrics are off", async () => {
    expect((await scrape({})).status).toBe(401);
    expect((await scrape({ authorization: `Bearer ${TOKEN}x` })).status).toBe(401);
    expect((await scrape({ authorization: TOKEN })).status).toBe(401);
    const off = createApp({ ...harness.hooklane, metrics: undefined });
    expect((await off.request("/metrics")).status).toBe(404);
  });

  it("in production answers only the token, and anyone with METRICS_PUBLIC=true; development needs none", async () => {
    const production = {
      NODE_ENV: "production",
      WEBHOOK_SECRET_KEY: randomBytes(32).toString("base64url"),
      AUTH_JWT_SECRET: randomBytes(32).toString("base64url"),
    };
    const scrapeAs = (env: Record<string, string>, headers: Record<string, string> = {}) =>
      createApp({ ...harness.hooklane, config: loadConfig(env) }).request("/metrics", { headers });

    const guarded = { ...production, METRICS_TOKEN: TOKEN };
    const refused = await scrapeAs(guarded);
    expect(refused.status).toBe(401);
    expect(refused.headers.get("www-authenticate")).toBe('Bearer realm="metrics"');
    for (const authorization of [`Bearer ${TOKEN}x`, `Bearer ${TOKEN.slice(0, -1)}`, `bearer ${TOKEN}`, "Bearer "]) {
      expect((await scrapeAs(guarded, { authorization })).status, authorization).toBe(401);
    }
    expect((await scrapeAs(guarded, { authorization: `Bearer ${TOKEN}` })).status).toBe(200);

    expect((await scrapeAs({ ...production, METRICS_PUBLIC: "true" })).status).toBe(200);
    // A configuration that says neither (production refuses to start with one) still gets nothing.
    const unguarded = { ...loadConfig(guarded), metricsToken: undefined };
    const bare = createApp({ ...harness.hooklane, config: unguarded });
    expect((await bare.request("/metrics", { headers: { authorization: "Bearer " } })).status).toBe(401);
    expect((await bare.request("/metrics", { headers: { authorization: "Bearer undefined" } })).status).toBe(401);

    expect((await scrapeAs({ NODE_ENV: "development" })).status).toBe(200);
    expect((await scrapeAs({ NODE_ENV: "test" })).status).toBe(200);
  });
});
