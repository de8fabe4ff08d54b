import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mintToken } from "../lib/auth/jwt.ts";
import { DEVELOPMENT_JWT_SECRET } from "../lib/config/env.ts";
import { createHooklane } from "../lib/create-hooklane.ts";
import type { Database } from "../lib/db/client.ts";
import { account, webhook } from "../lib/db/schema.ts";
import type { Hooklane } from "../lib/hooklane.ts";
import { createLogger } from "../lib/log/logger.ts";
import { HARNESS_START_MS, pgliteFactory, testConfig } from "../test/support/harness.ts";
import { createApp } from "./app.ts";

// Every compact JWE the sealer writes starts with its header, {"alg":"dir","enc":"A256GCM"}.
const SEALED = "eyJhbGciOiJkaXIiLCJlbmMiOiJBMjU2R0NNIn0";

describe("what the logs never carry", () => {
  const lines: string[] = [];
  const logger = createLogger({ level: "trace", format: "json", destination: { write: (line) => lines.push(line) } });
  let database: Database;
  let drop: () => Promise<void>;
  let hooklane: Hooklane;

  beforeAll(async () => {
    ({ database, drop } = await pgliteFactory());
    hooklane = await createHooklane(testConfig({ LOG_LEVEL: "trace" }), { database, logger });
    await database.db.insert(account).values({ id: "acc_logs", name: "Logs" });
  }, HARNESS_START_MS);
  afterAll(async () => {
    await database?.close();
    await drop?.();
  });

  it("logs a failed query by the driver's error: no statement, no parameters, no sealed secret", async () => {
    const sealed = await hooklane.secrets.seal("whsec_never_in_a_log");
    const row = {
      id: "wh_logs_dup",
      url: "https://hooks.acme.com/",
      events: ["*"],
      secretSealed: sealed,
      createdBy: "t",
    };
    await database.db.insert(webhook).values(row);
    const error = await database.db
      .insert(webhook)
      .values(row)
      .catch((e: unknown) => e);
    expect(String((error as Error).message)).toContain(sealed);
    lines.length = 0;
    logger.error({ err: error }, "insert failed");
    const logged = lines.join("");
    expect(JSON.parse(logged)).toMatchObject({ msg: "insert failed", err: { code: "23505" } });
    expect(logged).not.toContain(sealed);
    expect(logged).not.toContain(SEALED);
    expect(logged).not.toMatch(/whsec_|params|insert into/i);
  });

  it("puts an X-Request-Id on every response, the caller's own when sane, and the same id on its log line", async () => {
    const app = createApp(hooklane);
    const token = await mintToken(DEVELOPMENT_JWT_SECRET, { sub: "logs", account: "acc_logs" });
    const auth = { authorization: `Bearer ${token}` };
    const requests: Array<[string, RequestInit?]> = [
      ["/health"],
      ["/v3/webhooks", { headers: auth }],
      ["/v3/webhooks/wh_missing", { headers: auth }],
      ["/v3/webhooks"],
      ["/v3/payment-debts", { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: "{" }],
      ["/console"],
      ["/openapi.json"],
      ["/v3/webhooks", { headers: { ...auth, "x-request-id": "caller-trace-42" } }],
    ];
    for (const [path, init] of requests) {
      lines.length = 0;
      const response = await app.request(path, init);
      const id = response.headers.get("x-request-id");
      const sent = new Headers(init?.headers).get("x-request-id");
      expect(id, `${path} → ${response.status}`).toBe(sent ?? id);
      if (!sent) expect(id, `${path} → ${response.status}`).toMatch(/^req_[A-Za-z0-9_-]{16}$/);
      // Probes are answered before the request log: they come every few seconds.
      const logged = lines.map((line) => JSON.parse(line)).filter((record) => record.msg === "request");
      expect(
        logged.map((record) => record.requestId),
        path,
      ).toEqual(path === "/health" ? [] : [id]);
    }
  });

  it("logs requests, and their failures, without the token, the query string or any secret", async () => {
    const app = createApp(hooklane);
    const token = await mintToken(DEVELOPMENT_JWT_SECRET, { sub: "logs", account: "acc_logs" });
    const call = (method: string, path: string, body?: unknown) =>
      app.request(path, {
        method,
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    const answer = await call("POST", "/v3/webhooks", { url: "http://localhost:4000/h", events: ["*"] });
    const created = (await answer.json()) as { id: string };
    // Make the rotation's UPDATE fail inside the database, with both sealed secrets among its parameters.
    await database.db.execute(
      sql.raw("alter table webhook add constraint logs_test_no_rotation check (previous_secret_sealed is null)"),
    );
    lines.length = 0;
    const failed = await call("POST", `/v3/webhooks/${created.id}/rotate-secret`);
    expect(failed.status).toBe(500);
    const { requestId } = (await failed.json()) as { requestId: string };
    await call("GET", "/v3/webhooks?limit=5&cursor=query-secret-value");
    await app.request("/v3/webhooks", { headers: { authorization: `Bearer ${token}x` } });
    await app.request("/console/login", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", origin: "http://localhost" },
      body: `token=${token}`,
    });

    const logged = lines.join("");
    const records = lines.map((line) => JSON.parse(line));
    expect(records).toContainEqual(
      expect.objectContaining({ msg: "unhandled error", requestId, err: expect.objectContaining({ code: "23514" }) }),
    );
    expect(records).toContainEqual(expect.objectContaining({ msg: "request", route: "/v3/webhooks", status: 422 }));
    expect(logged).not.toContain(token.split(".")[2]!);
    expect(logged).not.toMatch(/authorization|bearer|cookie/i);
    expect(logged).not.toContain("query-secret-value");
    expect(logged).not.toContain(SEALED);
    expect(logged).not.toMatch(/whsec_|params/);
  });
});
