import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mintToken } from "../../../lib/auth/jwt.ts";
import { DEVELOPMENT_JWT_SECRET } from "../../../lib/config/env.ts";
import { HARNESS_START_MS, pgliteFactory, startHarness, type Harness } from "../../../test/support/harness.ts";
import { createApp } from "../../app.ts";

const ALICE = { account: "acc_alice" };
let harness: Harness;
let webhookId: string;

beforeAll(async () => {
  harness = await startHarness(pgliteFactory, { lane: false });
  await harness.call("POST", "/v3/accounts", {
    account: "acc_admin",
    admin: true,
    body: { id: "acc_alice", name: "A" },
  });
  const hook = await harness.call("POST", "/v3/webhooks", {
    ...ALICE,
    body: { url: "http://127.0.0.1:4000/hook", events: ["*"] },
  });
  webhookId = hook.body.id;
}, HARNESS_START_MS);
afterAll(() => harness?.close());

const errorsOf = async (method: string, path: string, body?: unknown) => {
  const answer = await harness.call(method, path, { ...ALICE, ...(body === undefined ? {} : { body }) });
  expect(answer.status, answer.text).toBe(422);
  expect(answer.headers.get("content-type")).toBe("application/problem+json");
  return answer.body.errors;
};

describe("strict input", () => {
  it("refuses an unknown body field by name instead of dropping it", async () => {
    expect(
      await errorsOf("POST", "/v3/webhooks", { url: "http://127.0.0.1:4000/x", events: ["*"], secret: "whsec_mine" }),
    ).toEqual([{ field: "secret", message: "is not a field of this request" }]);
  });

  it("names a misspelt field, not the lack of a change", async () => {
    expect(await errorsOf("PATCH", `/v3/webhooks/${webhookId}`, { descripton: "typo" })).toEqual([
      { field: "descripton", message: "is not a field of this request" },
    ]);
  });

  it("names each of several unknown fields, nested ones and odd names included", async () => {
    expect(
      await errorsOf("POST", "/v3/payment-debts", { amount: "1.00", currency: "EUR", "": 1, "a.b": 2, extra: 3 }),
    ).toEqual([
      { field: '[""]', message: "is not a field of this request" },
      { field: '["a.b"]', message: "is not a field of this request" },
      { field: "extra", message: "is not a field of this request" },
    ]);
  });

  it("refuses unknown query parameters and a body where the operation takes none", async () => {
    expect(await errorsOf("GET", "/v3/webhooks?limit=5&order=asc")).toEqual([
      { field: "order", message: "is not a field of this request" },
    ]);
    expect(await errorsOf("GET", `/v3/webhooks/${webhookId}?expand=secret`)).toEqual([
      { field: "expand", message: "is not a field of this request" },
    ]);
    expect(await errorsOf("POST", `/v3/webhooks/${webhookId}/rotate-secret`, { reason: "leak" })).toEqual([
      { field: "reason", message: "is not a field of this request" },
    ]);
    const empty = await harness.call("POST", `/v3/webhooks/${webhookId}/rotate-secret`, { ...ALICE, body: {} });
    expect(empty.status).toBe(200);
  });

  it("writes required-field and type messages for people", async () => {
    expect(await errorsOf("POST", "/v3/payment-debts", {})).toEqual([
      { field: "amount", message: "is required" },
      { field: "currency", message: "is required" },
    ]);
    expect(await errorsOf("POST", "/v3/payment-debts", { amount: true, currency: 978 })).toEqual([
      { field: "amount", message: "must be a string or a number" },
      { field: "currency", message: "must be a string, not a number" },
    ]);
    expect(await errorsOf("POST", "/v3/webhooks", { url: "http://127.0.0.1:4000/x", events: [] })).toEqual([
      { field: "events", message: "must not be empty" },
    ]);
    expect(await errorsOf("PATCH", `/v3/webhooks/${webhookId}`, { status: "gone" })).toEqual([
      { field: "status", message: 'must be one of "active", "paused"' },
    ]);
    expect(await errorsOf("GET", "/v3/webhooks?limit=lots")).toEqual([
      { field: "limit", message: "must be a number, not a non-number" },
    ]);
  });
});

describe("text at the edge", () => {
  it.each([
    ["NUL", "Acme\u0000Corp", "must not contain control characters (U+0000)"],
    ["an escape sequence", "\u001b[31mred", "must not contain control characters (U+001B)"],
    ["a C1 control", "next\u0085line", "must not contain control characters (U+0085)"],
    ["a lone surrogate", "half \ud83d", "must be valid Unicode text (it holds a lone surrogate)"],
  ])("refuses %s in a body string, naming the field", async (_, name, message) => {
    expect(await errorsOf("PATCH", "/v3/accounts/acc_alice", { name })).toEqual([{ field: "name", message }]);
    expect(await errorsOf("POST", "/v3/webhooks", { url: "http://127.0.0.1:4000/x", events: ["*", name] })).toEqual([
      { field: "events[1]", message },
    ]);
  });

  it("refuses NUL in a path id, a cursor and a recovery id", async () => {
    const nul = "must not contain control characters (U+0000)";
    expect(await errorsOf("GET", "/v3/payment-debts/pd_%00")).toEqual([{ field: "id", message: nul }]);
    expect(await errorsOf("GET", "/v3/webhooks?cursor=wh_%00")).toEqual([{ field: "cursor", message: nul }]);
    expect(await errorsOf("GET", `/v3/webhooks/${webhookId}/recoveries/whr_%00`)).toEqual([
      { field: "recoveryId", message: nul },
    ]);
  });

  it("answers deep nesting with a problem, never a 500", async () => {
    const depth = 100_000;
    const response = await createApp(harness.hooklane).request("/v3/payment-debts", {
      method: "POST",
      headers: { authorization: `Bearer ${await mintToken(DEVELOPMENT_JWT_SECRET, { sub: "t", ...ALICE })}` },
      body: `{"amount":"1.00","currency":"EUR","x":${"[".repeat(depth)}"\\u0000"${"]".repeat(depth)}}`,
    });
    expect(response.status).toBeGreaterThanOrEqual(400);
    expect(response.status).toBeLessThan(500);
    expect(response.headers.get("content-type")).toBe("application/problem+json");
  });

  it("keeps line breaks and tabs in body text, and every other character exactly", async () => {
    const description = "Línea 1\n\tzweite Zeile — 日本語 😀 ﬁ";
    const updated = await harness.call("PATCH", `/v3/webhooks/${webhookId}`, { ...ALICE, body: { description } });
    expect(updated.status).toBe(200);
    expect((await harness.call("GET", `/v3/webhooks/${webhookId}`, ALICE)).body.description).toBe(description);
  });
});

describe("dates at the edge", () => {
  const range = "must be between 1970-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z";

  it.each(["0000-01-01T00:00:00Z", "0001-01-01T00:00:00Z", "1969-12-31T23:59:59Z", "9999-12-31T23:00:00-14:00"])(
    "refuses %s in a query and a body",
    async (date) => {
      expect(await errorsOf("GET", `/v3/webhooks/${webhookId}/dispatches?since=${encodeURIComponent(date)}`)).toEqual([
        { field: "since", message: range },
      ]);
      expect(await errorsOf("POST", `/v3/webhooks/${webhookId}/recover`, { since: date })).toEqual([
        { field: "since", message: range },
      ]);
    },
  );

  it("refuses what it cannot keep exactly, and reads back the instant it was sent", async () => {
    expect(await errorsOf("POST", `/v3/webhooks/${webhookId}/recover`, { since: "2026-01-01T00:00:00.1234Z" })).toEqual(
      [{ field: "since", message: "must have at most millisecond precision (3 decimal places)" }],
    );
    expect(await errorsOf("POST", `/v3/webhooks/${webhookId}/recover`, { since: "2026-01-01" })).toEqual([
      { field: "since", message: "must be an ISO-8601 date-time with a time zone, e.g. 2026-12-01T09:30:00Z" },
    ]);
    const started = await harness.call("POST", `/v3/webhooks/${webhookId}/recover`, {
      ...ALICE,
      body: { since: "1970-01-01T00:00:00Z", until: "2026-01-01T01:00:00.123+01:00" },
    });
    expect(started.status).toBe(202);
    expect(started.body).toMatchObject({ since: "1970-01-01T00:00:00.000Z", until: "2026-01-01T00:00:00.123Z" });
    const read = await harness.call("GET", `/v3/webhooks/${webhookId}/recoveries/${started.body.id}`, ALICE);
    expect(read.body).toMatchObject({ since: "1970-01-01T00:00:00.000Z", until: "2026-01-01T00:00:00.123Z" });
  });
});
