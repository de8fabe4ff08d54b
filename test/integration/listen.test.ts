import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createInterface } from "node:readline";
import { eq, sql } from "drizzle-orm";
import { afterAll, beforeAll, expect, it } from "vitest";
import { mintToken } from "../../lib/auth/jwt.ts";
import { openDatabase, type Database } from "../../lib/db/client.ts";
import { webhook, webhookAttempt, webhookDispatch } from "../../lib/db/schema.ts";
import { verifyWebhook } from "../../lib/webhook/verify/webhook-verify.ts";
import { eventually } from "../support/eventually.ts";
import { createTestDatabase } from "../support/postgres.ts";
import { startReceiver, type ReceivedPost, type TestReceiver } from "../support/receiver.ts";

// Production: no host is allowlisted, so no loopback URL can be registered as a webhook.
const JWT_SECRET = randomBytes(32).toString("hex");
const ACCOUNT = "acc_listener";
const TTL_MS = 2_000;

interface Running {
  child: ChildProcess;
  lines: string[];
  /** Resolves with the first line (current or future) that matches. */
  line(pattern: RegExp, timeoutMs?: number): Promise<string>;
}

const processes: Running[] = [];
let databaseUrl: string;
let drop: () => Promise<void>;
let database: Database;
let receiver: TestReceiver;
let api: string;
let server: Running;
let token: string;
/** The receiver answers 500 to the next POST while this is set, then clears it. */
let failNext = false;

/** `command` (e.g. `npm run …`) as its own process group, its stdout read line by line. */
function start(name: string, [command, ...args]: string[], env: Record<string, string> = {}): Running {
  const child = spawn(command!, args, {
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
    env: {
      ...process.env,
      NODE_ENV: "production",
      DATABASE_URL: databaseUrl,
      AUTH_JWT_SECRET: JWT_SECRET,
      WEBHOOK_SECRET_KEY: randomBytes(32).toString("base64url"),
      METRICS_TOKEN: randomBytes(24).toString("base64url"),
      WEBHOOK_RETRY_SCHEDULE: "1s,1s,1s",
      WEBHOOK_LISTEN_TTL: `${TTL_MS}ms`,
      LOG_LEVEL: "info",
      LOG_FORMAT: "json",
      ...env,
    },
  });
  const lines: string[] = [];
  const waiting = new Set<(line: string) => void>();
  createInterface({ input: child.stdout! }).on("line", (line) => {
    lines.push(line);
    for (const waiter of waiting) waiter(line);
  });
  child.stderr!.on("data", (chunk) => process.stderr.write(`[${name}] ${chunk}`));
  const running: Running = {
    child,
    lines,
    line: (pattern, timeoutMs = 60_000) =>
      new Promise((resolve, reject) => {
        const found = lines.find((line) => pattern.test(line));
        if (found) return resolve(found);
        const timer = setTimeout(() => {
          waiting.delete(check);
          reject(new Error(`${name}: no line matching ${pattern} within ${timeoutMs} ms`));
        }, timeoutMs);
        const check = (line: string) => {
          if (!pattern.test(line)) return;
          clearTimeout(timer);
          waiting.delete(check);
          resolve(line);
        };
        waiting.add(check);
      }),
  };
  processes.push(running);
  return running;
}

function exited(running: Running): Promise<number | null> {
  const { child } = running;
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => running.child.once("exit", (code) => resolve(code)));
}

/** Signals the process group, and resolves with the exit code (null when a signal ended it). */
async function stop(running: Running, signal: NodeJS.Signals = "SIGTERM"): Promise<number | null> {
  const { child } = running;
  if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
  const done = exited(running);
  process.kill(-child.pid!, signal);
  return done;
}

async function call(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const response = await fetch(`${api}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

/**
 * The listen CLI against the API, forwarding to the receiver; resolves once
 * its stream is open. `npm run listen`, or `node scripts/listen.ts` itself
 * when its own exit code matters (npm reports a signal instead).
 */
async function listen(
  launcher: string[] = ["npm", "run", "--silent", "listen", "--"],
): Promise<{ cli: Running; secret: string; sessionId: string }> {
  const cli = start("listen", [
    ...launcher,
    "--forward-to",
    `${receiver.url}/hooks`,
    "--events",
    "payment-debt.created",
    "--header",
    "X-Team: listen",
    "--api",
    api,
    "--token",
    token,
  ]);
  const printed = await cli.line(/^Your webhook signing secret is /);
  const [, secret, sessionId] = /(whsec_\S+)\s+\(session (wh_\w+)\)/.exec(printed)!;
  await cli.line(/^Ready: forwarding payment-debt\.created to /);
  return { cli, secret: secret!, sessionId: sessionId! };
}

const eventIdOf = (post: ReceivedPost) => String(post.headers["hooklane-event-id"]);

beforeAll(async () => {
  const created = await createTestDatabase();
  databaseUrl = created.url;
  drop = created.drop;
  receiver = await startReceiver(() => {
    if (!failNext) return {};
    failNext = false;
    return { status: 500, body: "receiver down" };
  });
  server = start("api", ["npm", "run", "--silent", "api"], {
    HOST: "127.0.0.1",
    PORT: "0",
    CATALOGUE_AUTO_SYNC: "true",
  });
  const started = await server.line(/hooklane API on http:\/\/127\.0\.0\.1:\d+/);
  api = `http://127.0.0.1:${/127\.0\.0\.1:(\d+)/.exec(started)![1]}`;
  const workers = ["worker-1", "worker-2"].map((name) => start(name, ["npm", "run", "--silent", "worker"]));
  await Promise.all(workers.map((worker) => worker.line(/lane worker .* started/)));
  database = await openDatabase({ databaseUrl });
  token = await mintToken(JWT_SECRET, { sub: "dev", account: ACCOUNT, admin: true });
  expect((await call("POST", "/v3/accounts", { id: ACCOUNT, name: "Listener" })).status).toBe(201);
}, 120_000);

afterAll(async () => {
  await Promise.all(processes.map((running) => stop(running)));
  await database?.close();
  await receiver?.close();
  await drop?.();
});

it("forwards to a local receiver through `npm run listen`, with the API in production and two workers", async () => {
  // Production refuses the receiver as a webhook: the session is the only way to reach it.
  const refused = await call("POST", "/v3/webhooks", { url: `${receiver.url}/hooks`, events: ["*"] });
  expect(refused.status).toBe(422);

  const { cli, secret, sessionId } = await listen();

  // One event: it arrives within a second of the API's 2xx, verified with the secret the CLI printed.
  const created = await call("POST", "/v3/payment-debts", { amount: "10.00", currency: "EUR" });
  const answeredAt = Date.now();
  expect(created.status).toBe(201);
  const [first] = await receiver.waitFor(1, { timeoutMs: 10_000 });
  const latencyMs = first!.receivedAt - answeredAt;
  console.log(`2xx to the local receiver: ${latencyMs} ms`);
  expect(latencyMs).toBeLessThan(1_000);
  const verified = await verifyWebhook({ payload: first!.body, headers: first!.headers, secret });
  // The session's own header (`--header`) came along.
  expect(first!.headers["x-team"]).toBe("listen");
  expect(verified.event).toMatchObject({ type: "payment-debt.created", data: { id: created.body.id } });

  // The receiver's 500 is the attempt's recorded status, and the next attempt follows the schedule.
  failNext = true;
  await call("POST", "/v3/payment-debts", { amount: "11.00", currency: "EUR" });
  const [, failed, retried] = await receiver.waitFor(3, { timeoutMs: 15_000 });
  expect(eventIdOf(retried!)).toBe(eventIdOf(failed!));
  expect([failed!.headers["hooklane-attempt"], retried!.headers["hooklane-attempt"]]).toEqual(["1", "2"]);
  const [dispatch] = await database.db
    .select()
    .from(webhookDispatch)
    .where(eq(webhookDispatch.eventId, eventIdOf(failed!)));
  const detail = await eventually(
    () => call("GET", `/v3/webhook-dispatches/${dispatch!.id}`),
    (answer) => answer.body.status === "success",
  );
  expect(
    detail.body.attempts.map((a: { statusCode: number; outcome: string; responseExcerpt: string }) => [
      a.statusCode,
      a.outcome,
      a.responseExcerpt,
    ]),
  ).toEqual([
    [500, "retry", "receiver down"],
    [200, "success", "ok"],
  ]);

  // A burst: with both workers routing, each attempt reaches the receiver exactly once.
  const burst = 30;
  for (let i = 0; i < burst; i++) {
    expect((await call("POST", "/v3/payment-debts", { amount: `${i + 1}.00`, currency: "EUR" })).status).toBe(201);
  }
  await receiver.waitFor(3 + burst, { timeoutMs: 30_000 });
  const dispatches = await eventually(
    () => database.db.select().from(webhookDispatch).where(eq(webhookDispatch.webhookId, sessionId)),
    (rows) => rows.length === 2 + burst && rows.every((row) => row.status === "success"),
  );
  const attempts = await database.db
    .select({ n: sql<number>`count(*)::int` })
    .from(webhookAttempt)
    .where(sql`${webhookAttempt.dispatchId} in (select id from ${webhookDispatch} where webhook_id = ${sessionId})`);
  const keys = receiver.posts.map((post) => `${eventIdOf(post)}#${post.headers["hooklane-attempt"]}`);
  expect(new Set(keys).size).toBe(keys.length);
  expect(keys.length).toBe(attempts[0]!.n);
  expect(new Set(receiver.posts.map(eventIdOf))).toEqual(new Set(dispatches.map((row) => row.eventId)));
  console.log(`${dispatches.length} events, ${keys.length} POSTs, ${attempts[0]!.n} attempts recorded`);
  const workers = await database.rows<{ id: string }>(sql`select id from webhook_worker`);
  expect(workers).toHaveLength(2);
  // One printed line per delivery.
  await eventually(
    async () => cli.lines.filter((line) => / payment-debt\.created {2}evt_/.test(line)).length,
    (n) => n === keys.length,
  );

  // Killed outright, the CLI leaves its session to expire; then it is gone, with its deliveries.
  await stop(cli, "SIGKILL");
  await eventually(
    () => database.db.select().from(webhook).where(eq(webhook.id, sessionId)),
    (rows) => rows.length === 0,
    { timeoutMs: TTL_MS + 10_000, everyMs: 100 },
  );
  expect(await database.db.select().from(webhookDispatch).where(eq(webhookDispatch.webhookId, sessionId))).toEqual([]);
  // pino: 50 is error.
  expect(server.lines.filter((line) => line.startsWith("{") && JSON.parse(line).level >= 50)).toEqual([]);
});

it("deletes its session at once when stopped with Ctrl-C", async () => {
  const { cli, sessionId } = await listen([process.execPath, "scripts/listen.ts"]);
  expect(await database.db.select().from(webhook).where(eq(webhook.id, sessionId))).toHaveLength(1);
  expect(await stop(cli, "SIGINT")).toBe(0);
  expect(await database.db.select().from(webhook).where(eq(webhook.id, sessionId))).toEqual([]);
});
