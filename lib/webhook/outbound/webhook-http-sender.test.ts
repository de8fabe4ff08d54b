import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createHttpSender, type HttpSender } from "./webhook-http-sender.ts";

// The sender against real servers on loopback (allowlisted): what it makes of each kind of answer.

let sender: HttpSender;
const servers: Server[] = [];

beforeAll(() => {
  sender = createHttpSender({
    timeoutMs: 400,
    connectionsPerOrigin: 4,
    allowedHosts: ["127.0.0.1"],
    maxResponseBytes: 4_096,
    excerptBytes: 16,
  });
});
afterAll(() => sender.close());
afterEach(async () => {
  await Promise.all(
    servers.splice(0).map((s) => new Promise((resolve) => s.closeAllConnections() ?? s.close(resolve))),
  );
});

/** A subscriber that reads the whole request, then answers with `listener`; `bodies` gets what it read. */
async function serve(listener: (res: ServerResponse) => void, bodies: string[] = []): Promise<string> {
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk: Buffer) => (body += chunk));
    req.on("end", () => {
      bodies.push(body);
      listener(res);
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks?x=1`;
}

const post = (url: string) => sender.post(url, { "content-type": "application/json" }, '{"id":"evt_1"}');

describe("createHttpSender", () => {
  it("a 2xx is a success with the start of the body as its excerpt; the request arrives whole", async () => {
    const bodies: string[] = [];
    const url = await serve((res) => res.writeHead(202).end("accepted, thanks for the event"), bodies);
    expect(await post(url)).toEqual({ kind: "success", statusCode: 202, responseExcerpt: "accepted, thanks…" });
    expect(bodies).toEqual(['{"id":"evt_1"}']);
  });

  it("an empty 204 has no excerpt", async () => {
    const url = await serve((res) => res.writeHead(204).end());
    expect(await post(url)).toEqual({ kind: "success", statusCode: 204, responseExcerpt: null });
  });

  it("a 503 keeps its Retry-After and its excerpt; a 410 says the subscriber is gone", async () => {
    const busy = await serve((res) => res.writeHead(503, { "retry-after": "7" }).end("busy"));
    expect(await post(busy)).toEqual({
      kind: "failure",
      errorClass: "http_status",
      message: "HTTP 503",
      statusCode: 503,
      retryAfterMs: 7_000,
      responseExcerpt: "busy",
      gone: false,
    });
    const gone = await serve((res) => res.writeHead(410).end());
    expect(await post(gone)).toMatchObject({ errorClass: "http_status", statusCode: 410, gone: true });
  });

  it("informational answers before the real one are not the answer", async () => {
    const url = await serve((res) => {
      res.writeEarlyHints({ link: "</style.css>; rel=preload" });
      res.writeHead(200).end("ok");
    });
    expect(await post(url)).toEqual({ kind: "success", statusCode: 200, responseExcerpt: "ok" });
  });

  it("a redirect is not followed", async () => {
    const url = await serve((res) => res.writeHead(302, { location: "http://127.0.0.1:9/stolen" }).end());
    expect(await post(url)).toMatchObject({ errorClass: "redirect", message: "redirect 302 not followed" });
  });

  it("a declared length over the cap fails before the body is read; a chunked one once the cap is passed", async () => {
    const declared = await serve((res) => res.writeHead(200, { "content-length": "5000" }).end("x".repeat(5_000)));
    expect(await post(declared)).toMatchObject({
      errorClass: "response_too_large",
      message: "response body of 5000 bytes exceeds the 4096-byte cap",
      responseExcerpt: null,
      statusCode: 200,
    });
    const chunked = await serve((res) => {
      res.writeHead(200);
      for (let i = 0; i < 10; i++) res.write("y".repeat(1_000));
      res.end();
    });
    expect(await post(chunked)).toMatchObject({
      errorClass: "response_too_large",
      message: "response body exceeds the 4096-byte cap",
      responseExcerpt: `${"y".repeat(16)}…`,
    });
  });

  it("a body dripped past the deadline is a timeout, and so is an answer that never comes", async () => {
    const drip = await serve((res) => {
      res.writeHead(200);
      const timer = setInterval(() => (res.destroyed ? clearInterval(timer) : res.write(".")), 50);
      res.on("close", () => clearInterval(timer));
    });
    const started = Date.now();
    expect(await post(drip)).toMatchObject({ errorClass: "timeout", statusCode: null });
    expect(Date.now() - started).toBeGreaterThanOrEqual(350);
    const silent = await serve(() => undefined);
    expect(await post(silent)).toMatchObject({ errorClass: "timeout", statusCode: null });
  });

  it("a connection reset half-way through the body is a reset, and a closed port is refused", async () => {
    const reset = await serve((res) => {
      res.writeHead(200, { "content-length": "100" });
      res.write("partial");
      setTimeout(() => res.socket?.destroy(), 20);
    });
    expect(await post(reset)).toMatchObject({ errorClass: "connection_reset", statusCode: null });
    const closed = await serve(() => undefined);
    await new Promise((resolve) => servers.pop()!.close(resolve));
    expect(await post(closed)).toMatchObject({ errorClass: "connection_refused", statusCode: null });
  });
});
