import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { and, eq, sql } from "drizzle-orm";
import { Webhook as StandardWebhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { account, webhook, webhookAttempt, webhookDispatch } from "../../lib/db/schema.ts";
import { eventually } from "../support/eventually.ts";
import { startHarness, type Harness } from "../support/harness.ts";
import { postgresFactory } from "../support/postgres.ts";

const ACCOUNT = "acc_consent";

/** An endpoint that consents (per path) only once told to, and counts what reaches it. */
interface ConsentEndpoint {
  url: string;
  /** Paths whose OPTIONS answer consents; every other path's answers 405, as a server that never heard of it. */
  consenting: Set<string>;
  options: Array<{ path: string; headers: IncomingHttpHeaders }>;
  posts: Array<{ path: string; eventId: string }>;
  close(): Promise<void>;
}

async function startConsentEndpoint(): Promise<ConsentEndpoint> {
  const endpoint = { consenting: new Set<string>(), options: [], posts: [] } as unknown as ConsentEndpoint;
  const server: Server = createServer((request, response) => {
    const path = request.url ?? "/";
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      if (request.method === "OPTIONS") {
        endpoint.options.push({ path, headers: request.headers });
        // Never answers: the request runs into its deadline.
        if (path.startsWith("/silent")) return;
        if (!endpoint.consenting.has(path)) {
          response.writeHead(405, { allow: "POST" }).end();
          return;
        }
        const origin = String(request.headers["webhook-request-origin"]);
        response.writeHead(200, { allow: "POST", "webhook-allowed-origin": origin }).end();
        return;
      }
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { id: string };
      endpoint.posts.push({ path, eventId: body.id });
      response.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  endpoint.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  endpoint.close = () =>
    new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return endpoint;
}

/**
 * Endpoint consent on PostgreSQL with the lane and its sweeper running: a webhook of an account that requires
 * consent sends nothing to its URL until the endpoint answers the consent request, holds its events meanwhile
 * (none lost, none attempted), and delivers every one of them once it consents; a new URL asks again.
 */
describe("endpoint consent", () => {
  let harness: Harness;
  let endpoint: ConsentEndpoint;
  beforeAll(async () => {
    endpoint = await startConsentEndpoint();
    harness = await startHarness(postgresFactory);
    await harness.accounts(ACCOUNT, "acc_trusting");
  });
  afterAll(async () => {
    await harness?.close();
    await endpoint?.close();
  });

  const hookRow = async (id: string) =>
    (await harness.hooklane.database.db.select().from(webhook).where(eq(webhook.id, id)))[0]!;
  const openDebts = async (n: number) => {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      const answer = await harness.call("POST", "/v3/payment-debts", {
        account: ACCOUNT,
        body: { amount: `${i + 1}.00`, currency: "EUR" },
      });
      expect(answer.status, answer.text).toBe(201);
      ids.push(answer.body.id);
    }
    await harness.settled();
    return ids;
  };
  const dispatchesOf = (webhookId: string) =>
    harness.hooklane.database.db
      .select({
        status: webhookDispatch.status,
        attempts: webhookDispatch.attemptCount,
        eventId: webhookDispatch.eventId,
      })
      .from(webhookDispatch)
      .where(eq(webhookDispatch.webhookId, webhookId));
  const attemptsOf = async (webhookId: string) =>
    (
      await harness.hooklane.database.db
        .select({ n: sql<number>`count(*)::int` })
        .from(webhookAttempt)
        .innerJoin(webhookDispatch, eq(webhookDispatch.id, webhookAttempt.dispatchId))
        .where(eq(webhookDispatch.webhookId, webhookId))
    )[0]!.n;

  it("is an admin's to turn on for an account, not the account's", async () => {
    const self = await harness.call("PATCH", `/v3/accounts/${ACCOUNT}`, {
      account: ACCOUNT,
      body: { endpointConsent: false },
    });
    expect(self.status, self.text).toBe(403);
    const admin = await harness.call("PATCH", `/v3/accounts/${ACCOUNT}`, {
      account: ACCOUNT,
      admin: true,
      body: { endpointConsent: true },
    });
    expect(admin.status, admin.text).toBe(200);
    expect(admin.body.endpointConsent).toBe(true);
  });

  it("holds every event of a webhook whose endpoint never consents: 0 attempts, 0 lost; delivers them all once it does", async () => {
    const created = await harness.call("POST", "/v3/webhooks", {
      account: ACCOUNT,
      body: { url: `${endpoint.url}/held`, events: ["payment-debt.created"], scheme: "standard-webhooks" },
    });
    expect(created.status, created.text).toBe(201);
    const id = created.body.id as string;
    expect(created.body.consent).toMatchObject({ state: "pending", attempts: 0, granted: null });

    const debts = await openDebts(20);
    // The sweeper asked at once, and the endpoint's 405 was no consent.
    await eventually(
      () => hookRow(id),
      (row) => row.consentAttempts >= 1,
      { timeoutMs: 20_000 },
    );
    const request = endpoint.options.find((o) => o.path === "/held")!;
    expect(request.headers["webhook-request-origin"]).toBe("hooklane");
    // Signed as a delivery with an empty body is: the standard-webhooks library verifies it with the secret.
    const receiver = new StandardWebhook(created.body.secret);
    const sent = {
      "webhook-id": String(request.headers["webhook-id"]),
      "webhook-timestamp": String(request.headers["webhook-timestamp"]),
      "webhook-signature": String(request.headers["webhook-signature"]),
    };
    expect(() => receiver.verify("", sent)).not.toThrow();
    expect(() => receiver.verify("", { ...sent, "webhook-id": "consent_forged" })).toThrow();
    expect(String(request.headers["webhook-id"])).toMatch(/^consent_/);

    // Held: every event routed, none attempted, for as long as the lane keeps turning.
    await eventually(
      () => dispatchesOf(id),
      (rows) => rows.length === 20,
      { timeoutMs: 20_000 },
    );
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const held = await dispatchesOf(id);
    expect(held.map((d) => [d.status, d.attempts])).toEqual(Array.from({ length: 20 }, () => ["pending", 0]));
    expect(await attemptsOf(id)).toBe(0);
    expect(endpoint.posts.filter((p) => p.path === "/held")).toEqual([]);
    const read = await harness.call("GET", `/v3/webhooks/${id}`, { account: ACCOUNT });
    expect(read.body.consent).toMatchObject({
      state: "pending",
      lastError: "answered HTTP 405: not the consent answer",
    });
    expect(read.body.consent.nextRequest).not.toBeNull();
    const lane = await harness.call("GET", "/v3/lane", { account: ACCOUNT, admin: true });
    expect(lane.body.deliver.heldConsent).toBe(20);

    // Consent already granted, or never asked: nothing to request.
    const other = await harness.call("POST", "/v3/webhooks", {
      account: "acc_trusting",
      body: { url: `${endpoint.url}/trusting`, events: ["payment-debt.created"] },
    });
    expect(other.body.consent).toBeNull();
    const notAsked = await harness.call("POST", `/v3/webhooks/${other.body.id}/request-consent`, {
      account: "acc_trusting",
    });
    expect(notAsked.status).toBe(409);

    // Asked again at once: the endpoint consents now, and every held event goes out.
    endpoint.consenting.add("/held");
    await eventually(
      async () => {
        const answer = await harness.call("POST", `/v3/webhooks/${id}/request-consent`, { account: ACCOUNT });
        return answer;
      },
      (answer) => answer.status === 200,
      { timeoutMs: 15_000, everyMs: 1_000 },
    );
    const granted = await harness.call("GET", `/v3/webhooks/${id}`, { account: ACCOUNT });
    expect(granted.body.consent).toMatchObject({ state: "granted", lastError: null, nextRequest: null });
    expect(granted.body.consent.granted).not.toBeNull();
    await eventually(
      () => dispatchesOf(id),
      (rows) => rows.every((d) => d.status === "success"),
      { timeoutMs: 30_000 },
    );
    const delivered = endpoint.posts.filter((p) => p.path === "/held").map((p) => p.eventId);
    const expected = (await dispatchesOf(id)).map((d) => d.eventId);
    expect(new Set(delivered)).toEqual(new Set(expected));
    expect(expected).toHaveLength(debts.length);
    const again = await harness.call("POST", `/v3/webhooks/${id}/request-consent`, { account: ACCOUNT });
    expect(again.status).toBe(409);
  });

  it("asks again for a new URL, holding its events until it consents; a URL the account's endpoint consented to needs no asking", async () => {
    endpoint.consenting.add("/first");
    const created = await harness.call("POST", "/v3/webhooks", {
      account: ACCOUNT,
      body: { url: `${endpoint.url}/first`, events: ["payment-debt.created"] },
    });
    const id = created.body.id as string;
    // The first request, sent by the sweeper on its own, is answered with consent.
    await eventually(
      () => hookRow(id),
      (row) => row.consentState === "granted",
      { timeoutMs: 20_000 },
    );
    await openDebts(3);
    await eventually(
      () => dispatchesOf(id),
      (rows) => rows.length === 3 && rows.every((d) => d.status === "success"),
      { timeoutMs: 30_000 },
    );

    // A new URL: pending again; nothing reaches it.
    const moved = await harness.call("PATCH", `/v3/webhooks/${id}`, {
      account: ACCOUNT,
      body: { url: `${endpoint.url}/second` },
    });
    expect(moved.status, moved.text).toBe(200);
    expect(moved.body.consent).toMatchObject({ state: "pending", attempts: 0 });
    await openDebts(5);
    await eventually(
      () => hookRow(id),
      (row) => row.consentAttempts >= 1,
      { timeoutMs: 20_000 },
    );
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(endpoint.posts.filter((p) => p.path === "/second")).toEqual([]);
    const waiting = (await dispatchesOf(id)).filter((d) => d.status !== "success");
    expect(waiting.map((d) => [d.status, d.attempts])).toEqual(Array.from({ length: 5 }, () => ["pending", 0]));

    // Asking again within 10 s of the last request is refused, with when to ask.
    const early = await harness.call("POST", `/v3/webhooks/${id}/request-consent`, { account: ACCOUNT });
    expect(early.status).toBe(429);
    expect(Number(early.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);

    endpoint.consenting.add("/second");
    await eventually(
      () => harness.call("POST", `/v3/webhooks/${id}/request-consent`, { account: ACCOUNT }),
      (answer) => answer.status === 200,
      { timeoutMs: 15_000, everyMs: 1_000 },
    );
    await eventually(
      () => dispatchesOf(id),
      (rows) => rows.length === 8 && rows.every((d) => d.status === "success"),
      { timeoutMs: 30_000 },
    );
    expect(endpoint.posts.filter((p) => p.path === "/second")).toHaveLength(5);

    // Another webhook of the account on a URL its endpoint consented to: granted at once, no request.
    const before = endpoint.options.length;
    const twin = await harness.call("POST", "/v3/webhooks", {
      account: ACCOUNT,
      body: { url: `${endpoint.url}/second`, events: ["payment-debt.created"] },
    });
    expect(twin.body.consent).toMatchObject({ state: "granted", attempts: 0 });
    expect(endpoint.options.length).toBe(before);
  });

  it("holds the events of an endpoint that never answers at all", async () => {
    const created = await harness.call("POST", "/v3/webhooks", {
      account: ACCOUNT,
      body: { url: `${endpoint.url}/silent`, events: ["payment-debt.created"] },
    });
    const id = created.body.id as string;
    await openDebts(3);
    const row = await eventually(
      () => hookRow(id),
      (hook) => hook.consentAttempts >= 1,
      { timeoutMs: 20_000 },
    );
    expect(row.consentState).toBe("pending");
    expect(row.consentError).toBe("no response within the deadline: not the consent answer");
    await eventually(
      () => dispatchesOf(id),
      (rows) => rows.length === 3,
      { timeoutMs: 20_000 },
    );
    expect(await attemptsOf(id)).toBe(0);
    expect(endpoint.posts.filter((p) => p.path === "/silent")).toEqual([]);
  });

  it("asks nothing of a listen session's webhook", async () => {
    const session = await harness.call("POST", "/v3/listen-sessions", {
      account: ACCOUNT,
      body: { forwardTo: "http://localhost:4000/hooks" },
    });
    expect(session.status, session.text).toBe(201);
    const [listening] = await harness.hooklane.database.db
      .select()
      .from(webhook)
      .where(and(eq(webhook.account, ACCOUNT), eq(webhook.status, "listening")));
    expect(listening!.consentState).toBeNull();
  });

  it("sends the held events at once when an admin stops requiring consent of the account", async () => {
    const created = await harness.call("POST", "/v3/webhooks", {
      account: ACCOUNT,
      body: { url: `${endpoint.url}/released`, events: ["payment-debt.created"] },
    });
    const id = created.body.id as string;
    await openDebts(2);
    await eventually(
      () => dispatchesOf(id),
      (rows) => rows.length === 2,
      { timeoutMs: 20_000 },
    );
    expect(await attemptsOf(id)).toBe(0);
    const off = await harness.call("PATCH", `/v3/accounts/${ACCOUNT}`, {
      account: ACCOUNT,
      admin: true,
      body: { endpointConsent: false },
    });
    expect(off.status, off.text).toBe(200);
    expect((await hookRow(id)).consentState).toBeNull();
    await eventually(
      () => dispatchesOf(id),
      (rows) => rows.every((d) => d.status === "success"),
      { timeoutMs: 30_000 },
    );
    expect(endpoint.posts.filter((p) => p.path === "/released")).toHaveLength(2);
  });
});

/**
 * The same on Vercel Queues (the service emulated): a held webhook's deliver messages are consumed without an
 * attempt, and the sweeper (the cron) asks for consent; once given, its next sweep sends every held event.
 */
describe("endpoint consent on the vercel transport", () => {
  let harness: Harness;
  let endpoint: ConsentEndpoint;
  beforeAll(async () => {
    endpoint = await startConsentEndpoint();
    harness = await startHarness(postgresFactory, { driver: "vercel" });
    await harness.hooklane.database.db.insert(account).values({ id: ACCOUNT, name: ACCOUNT, endpointConsent: true });
  });
  afterAll(async () => {
    await harness?.close();
    await endpoint?.close();
  });

  it("holds the events until the endpoint consents, then delivers every one", async () => {
    const created = await harness.call("POST", "/v3/webhooks", {
      account: ACCOUNT,
      body: { url: `${endpoint.url}/vercel`, events: ["payment-debt.created"] },
    });
    expect(created.body.consent).toMatchObject({ state: "pending" });
    const id = created.body.id as string;
    for (let i = 0; i < 3; i++) {
      const answer = await harness.call("POST", "/v3/payment-debts", {
        account: ACCOUNT,
        body: { amount: "1.00", currency: "EUR" },
      });
      expect(answer.status, answer.text).toBe(201);
    }
    await harness.settled();
    const dispatches = () =>
      harness.hooklane.database.db
        .select({ status: webhookDispatch.status, attempts: webhookDispatch.attemptCount })
        .from(webhookDispatch)
        .where(eq(webhookDispatch.webhookId, id));
    await eventually(dispatches, (rows) => rows.length === 3, { timeoutMs: 20_000 });
    // Swept while the endpoint refuses: asked once, nothing sent, nothing lost.
    await harness.sweepReport();
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(endpoint.options.filter((o) => o.path === "/vercel")).toHaveLength(1);
    expect(endpoint.posts).toEqual([]);
    expect((await dispatches()).map((d) => [d.status, d.attempts])).toEqual([
      ["pending", 0],
      ["pending", 0],
      ["pending", 0],
    ]);

    endpoint.consenting.add("/vercel");
    await eventually(
      () => harness.call("POST", `/v3/webhooks/${id}/request-consent`, { account: ACCOUNT }),
      (answer) => answer.status === 200,
      { timeoutMs: 15_000, everyMs: 1_000 },
    );
    await harness.sweepReport();
    await eventually(dispatches, (rows) => rows.every((d) => d.status === "success"), { timeoutMs: 30_000 });
    expect(endpoint.posts.filter((p) => p.path === "/vercel")).toHaveLength(3);
  });
});
