import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDatabase } from "../../lib/db/client.ts";
import { capturedLogs } from "../support/captured-logs.ts";
import { eventually } from "../support/eventually.ts";
import { startHarness, type Harness } from "../support/harness.ts";
import { createTestDatabase, postgresFactory } from "../support/postgres.ts";
import { startReceiver, type TestReceiver } from "../support/receiver.ts";
import { startWorkerProcess, type WorkerProcess } from "../support/worker-process.ts";

/** One span as an OTLP/HTTP JSON export carries it, with its process's `service.name`. */
interface ExportedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
  status: { code?: number };
}

/** An OTLP/HTTP collector in this process: it keeps every span exported to it (JSON encoding). */
async function startCollector(): Promise<{ url: string; spans: ExportedSpan[]; close(): Promise<void> }> {
  const spans: ExportedSpan[] = [];
  const value = (v: Record<string, unknown>) =>
    v.stringValue ?? (v.intValue === undefined ? v.boolValue : Number(v.intValue));
  const server: Server = createServer((request, response) => {
    let body = "";
    request.on("data", (chunk: Buffer) => (body += chunk.toString("utf8")));
    request.on("end", () => {
      expect(request.url).toBe("/v1/traces");
      expect(request.headers["content-type"]).toMatch(/^application\/json/);
      for (const resource of JSON.parse(body).resourceSpans ?? []) {
        const service = resource.resource.attributes.find((a: { key: string }) => a.key === "service.name").value
          .stringValue as string;
        for (const scope of resource.scopeSpans ?? []) {
          for (const span of scope.spans ?? []) {
            spans.push({
              service,
              traceId: span.traceId,
              spanId: span.spanId,
              parentSpanId: span.parentSpanId ?? "",
              name: span.name,
              kind: span.kind,
              attributes: Object.fromEntries(
                (span.attributes ?? []).map((a: { key: string; value: Record<string, unknown> }) => [
                  a.key,
                  value(a.value),
                ]),
              ),
              status: span.status ?? {},
            });
          }
        }
      }
      response.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/**
 * OpenTelemetry across processes: the API in this process, the lane in a
 * worker process of its own, both exporting to one collector. One
 * `POST /v3/payment-debts` that arrives with a `traceparent` is one trace:
 * the request, its publish, the route, each claim and each attempt, and the
 * subscriber receives the trace on every attempt.
 */
describe("tracing, API and worker in separate processes", () => {
  const CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
  const CALLER_SPAN = "00f067aa0ba902b7";
  let collector: Awaited<ReturnType<typeof startCollector>>;
  let receiver: TestReceiver;
  let harness: Harness;
  let worker: WorkerProcess;
  let drop: () => Promise<void>;
  const logs = capturedLogs();

  beforeAll(async () => {
    collector = await startCollector();
    let failFirst = true;
    receiver = await startReceiver(() => (failFirst ? ((failFirst = false), { status: 503 }) : {}));
    const created = await createTestDatabase();
    drop = created.drop;
    const otel = { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url };
    harness = await startHarness(
      async () => ({
        database: await openDatabase({ databaseUrl: created.url }),
        databaseUrl: created.url,
        drop: async () => {},
      }),
      { lane: false, env: { ...otel, OTEL_SERVICE_NAME: "hooklane-api", LOG_LEVEL: "debug" }, logger: logs.logger },
    );
    await harness.accounts("acc_alice");
    worker = startWorkerProcess("traced-worker", {
      DATABASE_URL: created.url,
      NODE_ENV: "test",
      WEBHOOK_ALLOWED_HOSTS: "127.0.0.1",
      WEBHOOK_RETRY_SCHEDULE: "100ms,100ms,100ms,100ms,100ms",
      LOG_FORMAT: "json",
      ...otel,
      OTEL_SERVICE_NAME: "hooklane-worker",
    });
    await worker.ready;
  }, 120_000);
  afterAll(async () => {
    await worker?.stop();
    await harness?.close();
    await drop?.();
    await receiver?.close();
    await collector?.close();
  });

  it("makes one POST /v3/payment-debts one trace: request, publish, route, claims and attempts, sent on to the subscriber", async () => {
    const subscribed = await harness.call("POST", "/v3/webhooks", {
      account: "acc_alice",
      body: { url: `${receiver.url}/traced`, events: ["payment-debt.created"] },
    });
    expect(subscribed.status, subscribed.text).toBe(201);
    const opened = await harness.call("POST", "/v3/payment-debts", {
      account: "acc_alice",
      body: { amount: "5.00", currency: "EUR" },
      headers: { traceparent: `00-${CALLER_TRACE}-${CALLER_SPAN}-01` },
    });
    expect(opened.status, opened.text).toBe(201);
    await harness.settled();

    // A 503, then the delivery: each attempt's POST carries the trace, under a span of its own.
    const posts = await receiver.waitFor(2, { timeoutMs: 30_000 });
    const parents = posts.map((post) => /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/.exec(String(post.headers.traceparent)));
    expect(parents.map((match) => match?.[1])).toEqual([CALLER_TRACE, CALLER_TRACE]);
    expect(new Set(parents.map((match) => match?.[2])).size).toBe(2);

    // The API's spans are flushed here; the worker exports on its own schedule (a second).
    await harness.hooklane.tracing!.flush();
    const trace = await eventually(
      async () => collector.spans.filter((span) => span.traceId === CALLER_TRACE),
      (spans) =>
        spans.filter((span) => span.name.startsWith("attempt ")).length === 2 &&
        spans.some((s) => s.name.startsWith("route ")),
      { timeoutMs: 20_000 },
    );
    const named = (name: string) => trace.filter((span) => span.name === name);
    const [request] = named("POST /v3/payment-debts");
    const [publish] = named("publish payment-debt.created");
    const [route] = named("route payment-debt.created");
    const claims = named("claim payment-debt.created");
    const attempts = named("attempt payment-debt.created");
    expect(request).toMatchObject({ service: "hooklane-api", parentSpanId: CALLER_SPAN });
    expect(request!.attributes).toMatchObject({ "http.route": "/v3/payment-debts", "http.response.status_code": 201 });
    expect(publish).toMatchObject({ service: "hooklane-api", parentSpanId: request!.spanId });
    expect(route).toMatchObject({ service: "hooklane-worker", parentSpanId: publish!.spanId });
    expect(route!.attributes).toMatchObject({ "hooklane.dispatches": 1 });
    expect(claims.length).toBeGreaterThanOrEqual(2);
    expect(claims.every((claim) => claim.service === "hooklane-worker" && claim.parentSpanId === publish!.spanId)).toBe(
      true,
    );
    expect(attempts.map((attempt) => attempt.service)).toEqual(["hooklane-worker", "hooklane-worker"]);
    const byAttempt = attempts.sort(
      (a, b) => Number(a.attributes["hooklane.attempt"]) - Number(b.attributes["hooklane.attempt"]),
    );
    expect(byAttempt.map((attempt) => attempt.attributes["http.response.status_code"])).toEqual([503, 200]);
    expect(byAttempt[0]!.attributes["error.type"]).toBe("http_status");
    expect(byAttempt[0]!.status.code).toBe(2);
    expect(byAttempt[1]!.attributes["error.type"]).toBeUndefined();
    expect(byAttempt.map((attempt) => attempt.attributes["hooklane.webhook.id"])).toEqual([
      subscribed.body.id,
      subscribed.body.id,
    ]);
    // The subscriber's parent is the attempt that sent it.
    expect(byAttempt.map((attempt) => attempt.spanId)).toEqual(parents.map((match) => match?.[2]));
    // No secret and no body in any span.
    const exported = JSON.stringify(trace);
    expect(exported).not.toContain(subscribed.body.secret);
    expect(exported).not.toContain('"payload"');
    expect(exported).not.toContain("pd_");
    expect(request!.attributes["url.path"]).toBeUndefined();

    console.log(
      `[tracing] one trace ${CALLER_TRACE}: ${trace
        .map((span) => `${span.service}:${span.name}`)
        .sort()
        .join(", ")}`,
    );

    // Log lines carry the trace: the API's request line, the worker's failed attempt.
    expect(logs.lines.some((line) => line.trace_id === CALLER_TRACE && line.msg === "request")).toBe(true);
    const failed = worker
      .stdout()
      .split("\n")
      .filter((line) => line.includes("attempt failed; retrying"))
      .map((line) => JSON.parse(line) as { trace_id?: string });
    expect(failed.map((line) => line.trace_id)).toEqual([CALLER_TRACE]);
  });
});

describe("tracing on the vercel transport", () => {
  it("continues the publish span's trace through the route and deliver functions to the subscriber", async () => {
    const collector = await startCollector();
    const receiver = await startReceiver();
    const harness = await startHarness(postgresFactory, {
      driver: "vercel",
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url },
    });
    try {
      await harness.accounts("acc_alice");
      const subscribed = await harness.call("POST", "/v3/webhooks", {
        account: "acc_alice",
        body: { url: `${receiver.url}/traced`, events: ["payment-debt.created"] },
      });
      expect(subscribed.status, subscribed.text).toBe(201);
      // No traceparent from the caller: the request starts a trace of its own.
      const opened = await harness.call("POST", "/v3/payment-debts", {
        account: "acc_alice",
        body: { amount: "5.00", currency: "EUR" },
      });
      expect(opened.status, opened.text).toBe(201);
      await harness.settled();
      const [post] = await receiver.waitFor(1, { timeoutMs: 30_000 });
      const [, traceId, parent] = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/.exec(String(post!.headers.traceparent)) ?? [];
      expect(traceId).toBeDefined();
      await harness.hooklane.tracing!.flush();
      const trace = await eventually(
        async () => collector.spans.filter((span) => span.traceId === traceId),
        (spans) => spans.some((span) => span.name.startsWith("attempt ")),
        { timeoutMs: 20_000 },
      );
      const names = trace.map((span) => span.name).sort();
      expect(names).toEqual([
        "POST /v3/payment-debts",
        "attempt payment-debt.created",
        "claim payment-debt.created",
        "publish payment-debt.created",
        "route payment-debt.created",
      ]);
      const publish = trace.find((span) => span.name.startsWith("publish "))!;
      const request = trace.find((span) => span.name.startsWith("POST "))!;
      expect(request.parentSpanId).toBe("");
      expect(publish.parentSpanId).toBe(request.spanId);
      for (const name of ["route", "claim", "attempt"]) {
        expect(trace.find((span) => span.name.startsWith(`${name} `))!.parentSpanId).toBe(publish.spanId);
      }
      expect(trace.find((span) => span.name.startsWith("attempt "))!.spanId).toBe(parent);
    } finally {
      await harness.close();
      await receiver.close();
      await collector.close();
    }
  });
});
