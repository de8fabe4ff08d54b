import { mkdtemp, rm } from "node:fs/promises";
import { Agent, request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { processMemory } from "../../bench/product-processes.ts";
import { JSON_DEPTH_LIMIT, nestsDeeperThan } from "../../lib/api/json-depth.ts";
import { mintToken } from "../../lib/auth/jwt.ts";
import { DEVELOPMENT_JWT_SECRET } from "../../lib/config/env.ts";
import { spawnServer, type ServerProcess } from "../support/server-process.ts";

const MB = 1_048_576;
const CHUNK = 64 * 1_024;

interface Upload {
  path: string;
  bytes: number;
  /** Declare the size up front (Content-Length), or stream it chunked. */
  declared: boolean;
  fill: string;
  headers?: Record<string, string>;
}

interface Answer {
  status: number;
  /** When the answer's headers arrived. */
  ms: number;
  /** When the server hung up on the upload (or the client finished it). */
  closedMs: number;
  /** What the client got onto the socket: it keeps sending after the answer, as a hostile client would. */
  sentBytes: number;
  body: string;
}

/**
 * Streams `bytes` of `fill` to the server as a hostile client would: it
 * ignores the answer and keeps writing until the server hangs up (or it has
 * sent everything). Resolves with the answer and how far the upload got.
 */
function upload(server: ServerProcess, token: string, spec: Upload): Promise<Answer> {
  const started = performance.now();
  const { hostname, port } = new URL(server.url);
  return new Promise((resolve, reject) => {
    const chunk = Buffer.alloc(CHUNK, spec.fill);
    let sent = 0;
    let answer: Omit<Answer, "closedMs" | "sentBytes"> | undefined;
    let closedMs: number | undefined;
    const finish = () => {
      if (!answer || closedMs === undefined) return;
      agent.destroy();
      resolve({ ...answer, closedMs, sentBytes: sent });
    };
    // Keep-alive, as browsers and curl speak HTTP/1.1: the server decides when the connection ends.
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const req = request({
      host: hostname,
      port,
      method: "POST",
      path: spec.path,
      agent,
      headers: {
        authorization: `Bearer ${token}`,
        "content-type": "application/json",
        ...(spec.declared ? { "content-length": String(spec.bytes) } : {}),
        ...spec.headers,
      },
    });
    req.on("response", (res) => {
      const ms = performance.now() - started;
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (text: string) => (body += text));
      res.on("end", () => {
        answer = { status: res.statusCode!, ms, body };
        finish();
      });
    });
    // The server hanging up resets the upload: only a connection that ends with no answer is a failure.
    req.once("socket", (socket) => socket.once("close", () => req.destroy()));
    req.on("close", () => {
      closedMs = performance.now() - started;
      if (answer) finish();
      else setTimeout(() => (answer ? finish() : reject(new Error(`${spec.path}: no answer`))), 1_000);
    });
    req.on("error", () => {});
    const pump = () => {
      while (!req.destroyed && sent < spec.bytes) {
        const piece = Math.min(CHUNK, spec.bytes - sent);
        sent += piece;
        if (!req.write(piece === CHUNK ? chunk : chunk.subarray(0, piece))) return void req.once("drain", pump);
      }
      if (!req.destroyed) req.end();
    };
    pump();
  });
}

/** Samples the server's resident memory and the latency of GET /health until stopped. */
function watch(server: ServerProcess) {
  const baseline = processMemory(server.pid)!.rss;
  let peakRss = baseline;
  const sampler = setInterval(() => {
    const memory = processMemory(server.pid);
    if (memory) peakRss = Math.max(peakRss, memory.rss);
  }, 5);
  let running = true;
  let worstHealthMs = 0;
  let healthChecks = 0;
  const poller = (async () => {
    while (running) {
      const started = performance.now();
      const response = await fetch(`${server.url}/health`);
      await response.arrayBuffer();
      worstHealthMs = Math.max(worstHealthMs, performance.now() - started);
      healthChecks++;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  })();
  return async () => {
    running = false;
    await poller;
    clearInterval(sampler);
    return { rssGrowthMb: (peakRss - baseline) / MB, worstHealthMs, healthChecks };
  };
}

const report: string[] = [];

// The real server in its own process (as `npm start` runs it), so its memory is its own; a real client streams.
describe("request bodies against the running server", { timeout: 180_000 }, () => {
  let cwd: string;
  let server: ServerProcess;
  let token: string;

  beforeAll(async () => {
    cwd = await mkdtemp(join(tmpdir(), "hooklane-limits-"));
    server = await spawnServer({ PORT: "0", WEBHOOK_RETRY_SCHEDULE: "1s" }, cwd).started;
    token = await mintToken(DEVELOPMENT_JWT_SECRET, { sub: "drill", account: "acc_drill", admin: true });
    // Warm the routes the drill uses, so their first-use allocations are not counted as growth.
    for (let i = 0; i < 3; i++) {
      await upload(server, token, { path: "/v3/accounts", bytes: 2, declared: true, fill: "{" });
      await fetch(`${server.url}/health`).then((r) => r.arrayBuffer());
    }
  }, 120_000);
  afterAll(async () => {
    console.log(`\n[request limits] HTTP_BODY_LIMIT 1 MiB, JSON depth ${JSON_DEPTH_LIMIT}\n${report.join("\n")}`);
    await server?.stop();
    await rm(cwd, { recursive: true, force: true });
  });

  const drill = async (name: string, uploads: Upload[], expected: number) => {
    const stop = watch(server);
    const uploaded = await Promise.allSettled(uploads.map((spec) => upload(server, token, spec)));
    const figures = await stop();
    const answers = uploaded.map((result) => {
      if (result.status === "rejected") throw result.reason;
      return result.value;
    });
    const slowest = Math.max(...answers.map((a) => a.ms));
    const cutOff = Math.max(...answers.map((a) => a.closedMs));
    const sentMb = Math.max(...answers.map((a) => a.sentBytes)) / MB;
    report.push(
      `${name.padEnd(47)} → ${answers.map((a) => a.status).join(",")} in ${slowest.toFixed(0)} ms, ` +
        `upload cut off after ${sentMb.toFixed(1)} MB at ${cutOff.toFixed(0)} ms; ` +
        `server RSS +${figures.rssGrowthMb.toFixed(1)} MB; ` +
        `/health worst ${figures.worstHealthMs.toFixed(0)} ms of ${figures.healthChecks}`,
    );
    for (const answer of answers) {
      expect(answer.status, name).toBe(expected);
      expect(JSON.parse(answer.body).status, name).toBe(expected);
    }
    // Generous bounds, as the suite runs beside others on a shared machine: alone, the answers take tens of
    // milliseconds and /health stays under 200 ms (the printed figures). A server that read or parsed these
    // bodies would take seconds and hundreds of megabytes.
    expect(slowest, `${name}: answered within 1 s`).toBeLessThan(1_000);
    expect(cutOff, `${name}: the server hung up within 2 s`).toBeLessThan(2_000);
    expect(figures.rssGrowthMb, `${name}: server memory growth`).toBeLessThan(20);
    expect(figures.worstHealthMs, `${name}: a concurrent /health`).toBeLessThan(1_000);
    return answers;
  };

  const api = { path: "/v3/payment-debts", fill: "1" };
  const login = { path: "/console/login", fill: "x", headers: { "content-type": "application/x-www-form-urlencoded" } };

  it("refuses 10 MB and 100 MB to an API route with 413, declared or streamed", async () => {
    await drill("10 MB, Content-Length, POST /v3/payment-debts", [{ ...api, bytes: 10 * MB, declared: true }], 413);
    await drill("100 MB, Content-Length, POST /v3/payment-debts", [{ ...api, bytes: 100 * MB, declared: true }], 413);
    await drill("10 MB, chunked, POST /v3/payment-debts", [{ ...api, bytes: 10 * MB, declared: false }], 413);
    const [streamed] = await drill(
      "100 MB, chunked, POST /v3/payment-debts",
      [{ ...api, bytes: 100 * MB, declared: false }],
      413,
    );
    expect(JSON.parse(streamed!.body)).toMatchObject({ code: "payload_too_large" });
  });

  it("refuses 100 MB sign-in bodies before reading them, three at once", async () => {
    const three = Array.from({ length: 3 }, () => ({ ...login, bytes: 100 * MB, declared: true }));
    await drill("3 × 100 MB, Content-Length, POST /console/login", three, 413);
    await drill("100 MB, chunked, POST /console/login", [{ ...login, bytes: 100 * MB, declared: false }], 413);
  });

  it("refuses deeply nested JSON: 40 MB by its size, 1 MiB by its depth", async () => {
    const deep = { path: "/v3/payment-debts", fill: "[" };
    await drill("40 MB of '[', chunked, POST /v3/payment-debts", [{ ...deep, bytes: 40 * MB, declared: false }], 413);
    const [nested] = await drill(
      "1 MiB − 1 KiB of '[', POST /v3/payment-debts",
      [{ ...deep, bytes: MB - 1_024, declared: true }],
      400,
    );
    expect(JSON.parse(nested!.body)).toMatchObject({
      code: "bad_request",
      detail: "The body nests deeper than 64 levels.",
    });
    // The depth check's worst case: a whole 1 MiB body with nothing too deep, scanned to its end.
    const flat = `[${"1,".repeat(MB / 2 - 2)}1]`;
    const times = Array.from({ length: 5 }, () => {
      const started = performance.now();
      expect(nestsDeeperThan(flat, JSON_DEPTH_LIMIT)).toBe(false);
      return performance.now() - started;
    });
    report.push(`depth scan of a 1 MiB body that passes, 5 runs: ${times.map((t) => t.toFixed(1)).join(", ")} ms`);
  });

  it("keeps answering ordinary requests afterwards", async () => {
    const created = await fetch(`${server.url}/v3/accounts`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ id: "acc_drill", name: "Drill" }),
    });
    expect(created.status).toBe(201);
  });
});
