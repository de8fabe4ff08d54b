import { createServer as createHttpServer, type Server } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import type { TLSSocket } from "node:tls";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createTestCertificates, type TestCertificates } from "../../../test/support/test-certificates.ts";
import { classifyAddress, type AddressClassifier } from "./webhook-address-classifier.ts";
import { createHttpSender, type HttpSender } from "./webhook-http-sender.ts";
import type { ResolveHost } from "./webhook-pinned-connector.ts";

// Only loopback is ever a target. 127.0.0.2 plays a public address (the
// injected classifier says so); 127.0.0.3 stays what it is, loopback.
const PUBLIC_STAND_IN = "127.0.0.2";
const PRIVATE = "127.0.0.3";
const classify: AddressClassifier = (address) =>
  address === PUBLIC_STAND_IN ? { public: true, address } : classifyAddress(address);

interface TestServer {
  port: number;
  /** TCP connections accepted, whatever happened next. */
  connections: number;
  /** SNI of each TLS connection. */
  servernames: string[];
  close(): Promise<void>;
}

async function listen(server: Server, host: string, port: number, record: TestServer): Promise<TestServer> {
  server.on("connection", () => record.connections++);
  server.on("secureConnection", (socket: TLSSocket) => record.servernames.push(String(socket.servername)));
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, resolve);
  });
  record.port = (server.address() as AddressInfo).port;
  record.close = () =>
    new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return record;
}

function startServer(
  host: string,
  options: { port?: number; tls?: { key: string; cert: string } } = {},
): Promise<TestServer> {
  const respond = (_: unknown, res: import("node:http").ServerResponse) => {
    res.writeHead(200);
    res.end(`hello from ${host}`);
  };
  const server = options.tls ? createHttpsServer(options.tls, respond) : createHttpServer(respond);
  const record: TestServer = { port: 0, connections: 0, servernames: [], close: async () => {} };
  return listen(server, host, options.port ?? 0, record);
}

describe("the pinned connector", () => {
  let certificates: TestCertificates;
  const open: Array<{ close(): Promise<void> }> = [];

  beforeAll(async () => {
    certificates = await createTestCertificates();
  });
  afterAll(() => certificates.dispose());
  afterEach(async () => {
    await Promise.all(open.splice(0).map((thing) => thing.close()));
  });

  function sender(options: { resolve: ResolveHost; allowedHosts?: string[]; ca?: string }): HttpSender {
    const created = createHttpSender({
      timeoutMs: 2_000,
      connectionsPerOrigin: 4,
      allowedHosts: options.allowedHosts ?? [],
      resolve: options.resolve,
      classify,
      ...(options.ca ? { ca: options.ca } : {}),
    });
    open.push(created);
    return created;
  }

  /** Two servers on one port: the address that passes the check and the one that must never be reached. */
  async function publicAndPrivate(tls?: { key: string; cert: string }) {
    const publicServer = await startServer(PUBLIC_STAND_IN, tls ? { tls } : {});
    const privateServer = await startServer(PRIVATE, { port: publicServer.port, ...(tls ? { tls } : {}) });
    open.push(publicServer, privateServer);
    return { publicServer, privateServer, port: publicServer.port };
  }

  it("refuses a name that answers one public and one private address, and connects to neither", async () => {
    const { publicServer, privateServer, port } = await publicAndPrivate();
    const outcome = await sender({
      resolve: async () => [
        { address: PUBLIC_STAND_IN, family: 4 },
        { address: PRIVATE, family: 4 },
      ],
    }).post(`http://mixed.test:${port}/hook`, {}, "{}");
    expect(outcome).toMatchObject({ kind: "failure", errorClass: "blocked" });
    expect(outcome.kind === "failure" && outcome.message).toMatch(/127\.0\.0\.3.*loopback/);
    expect([publicServer.connections, privateServer.connections]).toEqual([0, 0]);
  });

  it("connects to the address it checked when the name rebinds to a private one afterwards", async () => {
    const tls = await certificates.issue(["rebind.test"]);
    const { publicServer, privateServer, port } = await publicAndPrivate(tls);
    const answers: string[] = [];
    // Public the first time it is asked, private every time after: a resolver with a 0 s TTL.
    const resolve: ResolveHost = async () => {
      const address = answers.length === 0 ? PUBLIC_STAND_IN : PRIVATE;
      answers.push(address);
      return [{ address, family: 4 }];
    };
    const rebinding = sender({ resolve, ca: certificates.ca });
    const first = await rebinding.post(`https://rebind.test:${port}/hook`, {}, "{}");
    expect(first).toMatchObject({ kind: "success", statusCode: 200, responseExcerpt: "hello from 127.0.0.2" });
    // One resolution per connection: the answer checked is the answer connected to.
    expect(answers).toEqual([PUBLIC_STAND_IN]);
    // Later POSTs reuse that checked connection or, on a new one, check again and refuse the private answer.
    for (let i = 0; i < 3; i++) {
      const outcome = await rebinding.post(`https://rebind.test:${port}/hook`, {}, "{}");
      expect(outcome.kind === "success" ? outcome.responseExcerpt : outcome.errorClass).toMatch(
        /^(hello from 127\.0\.0\.2|blocked)$/,
      );
    }
    expect(privateServer.connections).toBe(0);
    expect(publicServer.connections).toBeGreaterThan(0);
    expect(new Set(publicServer.servernames)).toEqual(new Set(["rebind.test"]));
  });

  it("delivers over HTTPS to an allowlisted host through the pinned address, verifying the certificate by name", async () => {
    const good = await startServer("127.0.0.1", { tls: await certificates.issue(["hooks.test"]) });
    const wrongName = await startServer("127.0.0.1", { tls: await certificates.issue(["other.test"]) });
    open.push(good, wrongName);
    const resolved: string[] = [];
    const pinned = sender({
      resolve: async (hostname) => {
        resolved.push(hostname);
        return [{ address: "127.0.0.1", family: 4 }];
      },
      allowedHosts: ["hooks.test"],
      ca: certificates.ca,
    });

    const ok = await pinned.post(`https://hooks.test:${good.port}/hook`, {}, "{}");
    expect(ok).toMatchObject({ kind: "success", statusCode: 200 });
    expect(good.servernames).toEqual(["hooks.test"]);

    const mismatch = await pinned.post(`https://hooks.test:${wrongName.port}/hook`, {}, "{}");
    expect(mismatch).toMatchObject({ kind: "failure", errorClass: "tls", statusCode: null });
    expect(mismatch.kind === "failure" && mismatch.message).toMatch(/hooks\.test/);
    expect(resolved).toEqual(["hooks.test", "hooks.test"]);

    // Without the test CA the same server is not trusted either.
    const untrusted = await sender({
      resolve: async () => [{ address: "127.0.0.1", family: 4 }],
      allowedHosts: ["hooks.test"],
    }).post(`https://hooks.test:${good.port}/hook`, {}, "{}");
    expect(untrusted).toMatchObject({ kind: "failure", errorClass: "tls" });
  });

  it("judges IP literals, which sockets never look up, before connecting", async () => {
    const server = await startServer("127.0.0.1");
    open.push(server);
    const resolve: ResolveHost = async () => {
      throw new Error("a literal address must not be resolved");
    };
    const refused = await sender({ resolve }).post(`http://127.0.0.1:${server.port}/hook`, {}, "{}");
    expect(refused).toMatchObject({ kind: "failure", errorClass: "blocked" });
    expect(server.connections).toBe(0);
    const allowed = await sender({ resolve, allowedHosts: ["127.0.0.1"] }).post(
      `http://127.0.0.1:${server.port}/hook`,
      {},
      "{}",
    );
    expect(allowed).toMatchObject({ kind: "success", statusCode: 200 });
  });

  it("treats a name with no answer as a DNS failure and a non-address answer as blocked", async () => {
    const none = await sender({ resolve: async () => [] }).post("https://nothing.test/hook", {}, "{}");
    expect(none).toMatchObject({ kind: "failure", errorClass: "dns" });
    const garbage = await sender({
      resolve: async () => [{ address: "not-an-address", family: 4 }],
    }).post("https://garbage.test/hook", {}, "{}");
    expect(garbage).toMatchObject({ kind: "failure", errorClass: "blocked" });
  });
});
