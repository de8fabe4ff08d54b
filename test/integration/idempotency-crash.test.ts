import { spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { request } from "node:http";
import { connect, createServer, type AddressInfo, type Socket } from "node:net";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mintToken } from "../../lib/auth/jwt.ts";
import { DEVELOPMENT_JWT_SECRET } from "../../lib/config/env.ts";
import { eventually } from "../support/eventually.ts";
import { createTestDatabase } from "../support/postgres.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const ACCOUNT = "acc_crash";

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** `node app/server.ts` on `databaseUrl` without a lane (route messages stay in the outbox, countable). */
async function startApi(databaseUrl: string, port: number): Promise<ChildProcess> {
  const child = spawn(process.execPath, ["app/server.ts"], {
    cwd: ROOT,
    stdio: ["ignore", "ignore", "pipe"],
    env: {
      ...process.env,
      NODE_ENV: "test",
      DATABASE_URL: databaseUrl,
      PORT: String(port),
      HOOKLANE_LANE: "off",
      WEBHOOK_ALLOWED_HOSTS: "127.0.0.1",
      LOG_LEVEL: "error",
    },
  });
  child.stderr!.on("data", (chunk) => process.stderr.write(`[api] ${chunk}`));
  await eventually(
    () =>
      fetch(`http://127.0.0.1:${port}/health`).then(
        (response) => response.status,
        () => 0,
      ),
    (status) => status === 200,
    { timeoutMs: 60_000, everyMs: 50 },
  );
  return child;
}

function kill(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once("exit", () => resolve());
    child.kill("SIGKILL");
  });
}

/**
 * A TCP hop between a client and the API that passes requests through and
 * withholds every answer: what the client sees when the network fails after
 * the server has done its work. `withheld` is what the server sent.
 */
async function partition(apiPort: number) {
  const withheld: Buffer[] = [];
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(apiPort, "127.0.0.1");
    sockets.add(client).add(upstream);
    client.pipe(upstream);
    upstream.on("data", (chunk: Buffer) => withheld.push(chunk));
    upstream.on("error", () => client.destroy());
    upstream.on("close", () => client.destroy());
    client.on("error", () => upstream.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as AddressInfo).port,
    withheld: () => Buffer.concat(withheld).toString("utf8"),
    close: () => {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}

/** What a client got for a request: the answer's bytes, or the error it saw instead. */
type Outcome = { status: number; text: string } | { error: string };

/** Sends a request with node:http and settles with whatever happens, answer or connection error. */
function send(port: number, method: string, path: string, headers: Record<string, string>, body?: string) {
  return new Promise<Outcome>((resolve) => {
    const req = request({ host: "127.0.0.1", port, method, path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => resolve({ status: res.statusCode!, text: Buffer.concat(chunks).toString("utf8") }));
      res.on("error", (error) => resolve({ error: error.message }));
    });
    req.on("error", (error) => resolve({ error: error.message }));
    req.end(body);
  });
}

describe("Idempotency-Key across an API process killed after the commit", () => {
  let database: { url: string; drop(): Promise<void> };
  let client: pg.Client;
  let api: ChildProcess | undefined;

  beforeAll(async () => {
    database = await createTestDatabase();
    client = new pg.Client({ connectionString: database.url });
    await client.connect();
  });
  afterAll(async () => {
    if (api) await kill(api);
    await client?.end();
    await database?.drop();
  });

  const count = async (query: string, params: unknown[] = []) =>
    Number((await client.query(`select count(*)::int as n from ${query}`, params)).rows[0].n);

  it("answers the retry with the committed result, creating and publishing nothing new", async () => {
    const port = await freePort();
    api = await startApi(database.url, port);
    const admin = await mintToken(DEVELOPMENT_JWT_SECRET, { sub: "ops", account: "acc_ops", admin: true });
    const token = await mintToken(DEVELOPMENT_JWT_SECRET, { sub: "client", account: ACCOUNT });
    const json = (bearer: string, extra: Record<string, string> = {}) => ({
      authorization: `Bearer ${bearer}`,
      "content-type": "application/json",
      ...extra,
    });
    expect(
      await send(port, "POST", "/v3/accounts", json(admin), JSON.stringify({ id: ACCOUNT, name: "Crash" })),
    ).toMatchObject({ status: 201 });
    // Someone listens, so the debt's event is written to the outbox with it.
    const hook = await send(
      port,
      "POST",
      "/v3/webhooks",
      json(token),
      JSON.stringify({ url: "http://127.0.0.1:4000/hook", events: ["payment-debt.created"] }),
    );
    expect(hook).toMatchObject({ status: 201 });

    const key = randomUUID();
    const body = JSON.stringify({ amount: "99.95", currency: "EUR" });
    const headers = json(token, { "idempotency-key": key });

    // The first attempt goes through a network that loses every answer; as soon as the mutation has
    // committed (the key's row is visible), the API process dies. The client sees a connection error.
    const network = await partition(port);
    const firstAttempt = send(network.port, "POST", "/v3/payment-debts", headers, body);
    await eventually(
      () => count("idempotency_key where account = $1 and key = $2", [ACCOUNT, key]),
      (n) => n === 1,
      { everyMs: 1 },
    );
    await kill(api);
    const first = await firstAttempt;
    await network.close();
    expect(first).toEqual({ error: "socket hang up" });
    expect(await count("payment_debt")).toBe(1);
    expect(await count("webhook_route_job")).toBe(1);

    api = await startApi(database.url, port);
    const retry = await send(port, "POST", "/v3/payment-debts", headers, body);
    expect(retry).toMatchObject({ status: 201 });
    const created = JSON.parse((retry as { text: string }).text);
    const [row] = (await client.query("select id, amount::text from payment_debt")).rows;
    expect(created).toMatchObject({ id: row.id, object: "payment-debt", amount: "99.95", account: ACCOUNT });
    // Whatever the server had sent before it died, the retry repeats byte for byte.
    const lost = network.withheld();
    if (lost) expect(lost.endsWith(`\r\n\r\n${(retry as { text: string }).text}`), lost).toBe(true);

    const other = await send(
      port,
      "POST",
      "/v3/payment-debts",
      headers,
      JSON.stringify({ amount: "1.00", currency: "EUR" }),
    );
    expect(other).toMatchObject({ status: 422 });

    // One debt, one event: the retry ran nothing and published nothing.
    expect(await count("payment_debt")).toBe(1);
    const jobs = (await client.query("select message from webhook_route_job")).rows;
    expect(jobs).toHaveLength(1);
    expect(jobs[0].message).toMatchObject({ type: "payment-debt.created", resourceId: row.id });
    process.stderr.write(
      `[idempotency-crash] the server ${lost ? "had sent the lost answer" : "died before sending"}; the retry replayed it\n`,
    );
  });
});
