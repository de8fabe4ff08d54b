import { serve, type ServerType } from "@hono/node-server";
import { connect, type Socket } from "node:net";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HARNESS_START_MS, pgliteFactory, startHarness, type Harness } from "../test/support/harness.ts";
import { createApp } from "./app.ts";
import { capConnections, httpServerOptions } from "./http-server-limits.ts";

const HEADERS_TIMEOUT_MS = 2_000;

/** Resolves when `socket` is closed by the server, with the bytes it answered. */
const closed = (socket: Socket) =>
  new Promise<string>((resolve) => {
    let answer = "";
    socket.on("data", (chunk) => (answer += chunk.toString("latin1")));
    socket.on("error", () => {});
    socket.on("close", () => resolve(answer));
  });

describe("the HTTP server's limits on slow and greedy clients", () => {
  let harness: Harness;
  let server: ServerType;
  let port: number;

  beforeAll(async () => {
    harness = await startHarness(pgliteFactory, {
      lane: false,
      env: {
        HTTP_HEADERS_TIMEOUT: `${HEADERS_TIMEOUT_MS}ms`,
        HTTP_REQUEST_TIMEOUT: "3s",
        HTTP_MAX_CONNECTIONS: "150",
        HTTP_BODY_LIMIT: "1kb",
      },
    });
    const limits = harness.hooklane.config.http;
    await new Promise<void>((listening) => {
      server = serve(
        {
          fetch: createApp(harness.hooklane).fetch,
          hostname: "127.0.0.1",
          port: 0,
          serverOptions: httpServerOptions(limits),
        },
        (info: AddressInfo) => {
          port = info.port;
          listening();
        },
      );
      capConnections(server, limits);
    });
  }, HARNESS_START_MS);
  afterAll(async () => {
    await new Promise((done) => server?.close(done));
    await harness?.close();
  });

  /** How long `GET /health` takes on a connection of its own, in ms. */
  const probe = () =>
    new Promise<number>((resolve, reject) => {
      const started = performance.now();
      const socket = connect(port, "127.0.0.1", () =>
        socket.write("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"),
      );
      let answer = "";
      socket.on("data", (chunk) => (answer += chunk));
      socket.on("error", reject);
      socket.on("close", () =>
        /^HTTP\/1\.1 200 /.test(answer) ? resolve(performance.now() - started) : reject(new Error(answer)),
      );
    });

  it("cuts off 100 slowloris connections at the headers timeout, while /health keeps answering at once", async () => {
    const started = performance.now();
    const request = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + "a".repeat(60);
    const sockets = Array.from({ length: 100 }, () => connect(port, "127.0.0.1"));
    const cutOff = sockets.map((socket) => closed(socket).then(() => performance.now() - started));
    // One header byte per second on each connection, for at most 10 s whatever happens.
    let sent = 0;
    const drip = setInterval(() => {
      for (const socket of sockets) if (!socket.destroyed) socket.write(request[sent % request.length]!);
      sent++;
    }, 1_000);
    const probes: number[] = [];
    try {
      const deadline = performance.now() + 10_000;
      while (performance.now() < deadline && sockets.some((socket) => !socket.closed)) {
        probes.push(await probe());
        await new Promise((tick) => setTimeout(tick, 250));
      }
    } finally {
      clearInterval(drip);
      for (const socket of sockets) socket.destroy();
    }
    const times = await Promise.all(cutOff);
    // Node checks every second at most (connectionsCheckingInterval): cut between the timeout and a bit after.
    expect(Math.max(...times)).toBeLessThan(HEADERS_TIMEOUT_MS + 2_500);
    expect(Math.min(...times)).toBeGreaterThanOrEqual(HEADERS_TIMEOUT_MS - 100);
    expect(probes.length).toBeGreaterThanOrEqual(4);
    expect(Math.max(...probes), `probes: ${probes.map(Math.round).join(", ")} ms`).toBeLessThan(200);
  }, 30_000);

  it("answers a body over the limit with 413 and Connection: close, then ends the connection", async () => {
    const socket = connect(port, "127.0.0.1");
    const answered = closed(socket);
    socket.write(
      "POST /v3/webhooks HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{",
    );
    const ended = new Promise<boolean>((resolve) => {
      socket.on("end", () => resolve(true));
      setTimeout(() => resolve(false), 5_000).unref();
    });
    expect(await ended).toBe(true);
    const answer = await answered;
    expect(answer).toMatch(/^HTTP\/1\.1 413 /);
    expect(answer).toMatch(/\r\nconnection: close\r\n/i);
    expect(answer).toContain('"status":413');
  });

  it("closes connections past HTTP_MAX_CONNECTIONS as they are accepted", async () => {
    // Each held connection asks once and stays open (keep-alive): an answer proves the server counts it.
    const held = Array.from({ length: 150 }, () => connect(port, "127.0.0.1"));
    try {
      await Promise.all(
        held.map(
          (socket) =>
            new Promise<void>((answered, failed) => {
              socket.once("data", () => answered());
              socket.once("close", () => failed(new Error("a connection within the cap was closed")));
              socket.write("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
            }),
        ),
      );
      const extra = connect(port, "127.0.0.1", () => extra.write("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"));
      expect(await closed(extra)).toBe("");
    } finally {
      for (const socket of held) socket.destroy();
    }
  });
});
