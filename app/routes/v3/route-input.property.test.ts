import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mintToken } from "../../../lib/auth/jwt.ts";
import { DEVELOPMENT_JWT_SECRET } from "../../../lib/config/env.ts";
import { HARNESS_START_MS, pgliteFactory, startHarness, type Harness } from "../../../test/support/harness.ts";
import {
  createRouteFixture,
  PROBE_ACCOUNT,
  ROUTE_PROBES,
  V3_ROUTES,
  type ProbeRequest,
  type RouteFixture,
} from "../../../test/support/route-probes.ts";
import { createApp } from "../../app.ts";
import { hostileString } from "../../../test/support/hostile-strings.ts";

// ---------------------------------------------------------------------------
// What hostile or careless clients send.
// ---------------------------------------------------------------------------

const nastyString = hostileString([
  "",
  " ",
  "\u0000",
  "a\u0000b",
  "\ud800",
  "x\udfff",
  "\u001b[31m",
  "\u007f",
  "\u0085",
  "line\nbreak",
  "x".repeat(3_000),
  "💥",
  "%00",
  "' or 1=1 --",
  "0000-01-01T00:00:00Z",
  "0001-01-01T00:00:00Z",
  "1969-12-31T23:59:59Z",
  "9999-12-31T23:59:59.9999Z",
  "+275760-09-13T00:00:00Z",
  "2026-02-30T00:00:00Z",
  "2026-01-01T00:00:00.123456789Z",
  "1e400",
  "-1",
  "NaN",
  "http://127.0.0.1:4000/\u0000",
  "https://[::1]/",
  "javascript:alert(1)",
]);
const extremeDate = fc
  .date({ min: new Date(-8_640_000_000_000_000), max: new Date(8_640_000_000_000_000), noInvalidDate: true })
  .map((date) => date.toISOString());
/** A JSON value as text: whatever JSON.stringify cannot write (1e400, -0) included. */
const nastyJson: fc.Arbitrary<string> = fc.oneof(
  nastyString.map((value) => JSON.stringify(value)),
  extremeDate.map((value) => JSON.stringify(value)),
  fc.constantFrom("1e400", "-1e400", "-0", "1e-400", "9007199254740993", "123456789012345678901234567890", "0.1"),
  fc.integer().map(String),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map(String),
  fc.constantFrom("true", "false", "null", "[]", "{}", '[""]', '{"":null}', '["\\u0000"]', "[[[[[[1]]]]]]"),
  fc.array(nastyString, { maxLength: 4 }).map((items) => JSON.stringify(items)),
);
const nastyKey = fc.oneof(
  nastyString,
  fc.constantFrom("secret", "id", "account", "__proto__", "constructor", "created"),
);

/** How one valid request is spoiled. */
type Spoil =
  | { kind: "field"; field: number; value: string }
  | { kind: "unknown"; key: string; value: string }
  | { kind: "missing"; field: number }
  | { kind: "body"; text: string }
  | { kind: "segment"; segment: number; value: string }
  | { kind: "query"; key: string; value: string };

const queryKey = fc.oneof(fc.constantFrom("limit", "cursor", "status", "since", "until"), nastyKey);
const spoil: fc.Arbitrary<Spoil> = fc.oneof(
  fc.record({ kind: fc.constant("field" as const), field: fc.nat(), value: nastyJson }),
  fc.record({ kind: fc.constant("unknown" as const), key: nastyKey, value: nastyJson }),
  fc.record({ kind: fc.constant("missing" as const), field: fc.nat() }),
  fc.record({
    kind: fc.constant("body" as const),
    text: fc.oneof(nastyJson, nastyString, fc.constantFrom("{", '{"a":', "\u0000")),
  }),
  fc.record({
    kind: fc.constant("segment" as const),
    segment: fc.nat(),
    value: fc.oneof(nastyString, fc.constantFrom("%00", "%FF", "%E0%A4%A", "%", "..", "%2F")),
  }),
  fc.record({
    kind: fc.constant("query" as const),
    key: queryKey,
    value: fc.oneof(nastyString, extremeDate, fc.constantFrom("%00", "%ZZ", "1e400", "-1", "0", "101")),
  }),
);

/** Spoils every route gets before the random ones: the inputs that once answered 500. */
const KNOWN_HOSTILE: Spoil[] = [
  { kind: "query", key: "since", value: "0000-01-01T00:00:00Z" },
  { kind: "query", key: "until", value: "0001-01-01T00:00:00Z" },
  { kind: "query", key: "cursor", value: "%00" },
  { kind: "query", key: "limit", value: "1e400" },
  { kind: "query", key: "status", value: "\ud800" },
  ...[0, 1, 2].map((segment): Spoil => ({ kind: "segment", segment, value: "%00" })),
  ...[0, 1, 2, 3].flatMap((field): Spoil[] => [
    { kind: "field", field, value: JSON.stringify("a\u0000b") },
    { kind: "field", field, value: JSON.stringify("\ud800") },
    { kind: "field", field, value: JSON.stringify("0000-01-01T00:00:00Z") },
    { kind: "field", field, value: "1e400" },
    { kind: "missing", field },
  ]),
  { kind: "unknown", key: "secret", value: JSON.stringify("whsec_mine") },
  { kind: "unknown", key: "descripton", value: JSON.stringify("typo") },
  { kind: "body", text: "[]" },
];

/** Percent-encodes text; where it is not well-formed Unicode, its raw UTF-16 units as UTF-8-ish bytes. */
function encode(text: string): string {
  try {
    return encodeURIComponent(text);
  } catch {
    return [...text].map((char) => (char.isWellFormed() ? encodeURIComponent(char) : "%ED%A0%80")).join("");
  }
}

/** The request `valid` becomes once `how` spoils it: a path, query and body text. */
function spoiled(valid: ProbeRequest, how: Spoil): { path: string; body: string | undefined } {
  const [pathname, search = ""] = valid.path.split("?");
  let segments = pathname!.split("/");
  let query = search;
  const entries = Object.entries(valid.body ?? {});
  let body = valid.body === undefined ? undefined : JSON.stringify(valid.body);
  const at = (n: number, length: number) => n % Math.max(length, 1);
  const jsonObject = (pairs: Array<[string, string]>) =>
    `{${pairs.map(([key, value]) => `${JSON.stringify(key)}:${value}`).join(",")}}`;
  const withValues = entries.map(([key, value]): [string, string] => [key, JSON.stringify(value)]);
  switch (how.kind) {
    case "field":
      if (entries.length > 0) withValues[at(how.field, entries.length)]![1] = how.value;
      body = jsonObject(withValues);
      break;
    case "unknown":
      body = jsonObject([...withValues, [how.key, how.value]]);
      break;
    case "missing":
      withValues.splice(at(how.field, entries.length), 1);
      body = jsonObject(withValues);
      break;
    case "body":
      body = how.text;
      break;
    case "segment": {
      // Segments after "/v3/<collection>" are ids and sub-paths; spoil one of those only.
      const ids = segments.map((_, i) => i).filter((i) => i >= 3);
      if (ids.length > 0) {
        const index = ids[at(how.segment, ids.length)]!;
        segments = segments.map((segment, i) =>
          i === index ? (/%/.test(how.value) ? how.value : encode(how.value)) : segment,
        );
      }
      break;
    }
    case "query":
      query = `${query ? `${query}&` : ""}${encode(how.key)}=${/%/.test(how.value) ? how.value : encode(how.value)}`;
      break;
  }
  return { path: `${segments.join("/")}${query ? `?${query}` : ""}`, body };
}

// ---------------------------------------------------------------------------

describe("every route of the app's route table, fed hostile input", () => {
  let harness: Harness;
  let fixture: RouteFixture;
  let app: ReturnType<typeof createApp>;
  const tokens: Record<"user" | "admin", string> = { user: "", admin: "" };

  beforeAll(async () => {
    // Every listen-session route's run makes its own session: the per-account cap stands aside here.
    harness = await startHarness(pgliteFactory, { lane: false, env: { WEBHOOK_QUOTA_LISTEN_SESSIONS: "1000" } });
    fixture = await createRouteFixture(harness);
    app = createApp(harness.hooklane);
    tokens.user = await mintToken(DEVELOPMENT_JWT_SECRET, { sub: "fuzzer", account: PROBE_ACCOUNT });
    tokens.admin = await mintToken(DEVELOPMENT_JWT_SECRET, { sub: "fuzzer", account: PROBE_ACCOUNT, admin: true });
  }, HARNESS_START_MS);
  afterAll(() => harness?.close());

  it.each(V3_ROUTES)("%s: never 5xx; every 4xx is problem+json, and every 422 names each field", async (route) => {
    const method = route.split(" ")[0]!;
    const probe = ROUTE_PROBES[route]!;
    await fc.assert(
      fc.asyncProperty(spoil, fc.option(fc.stringMatching(/^[\x20-\x7e]{0,300}$/)), async (how, idempotencyKey) => {
        const valid = await probe(harness, fixture);
        const request = spoiled(valid, how);
        const response = await app.request(request.path, {
          method,
          headers: {
            authorization: `Bearer ${valid.admin ? tokens.admin : tokens.user}`,
            "content-type": "application/json",
            ...(idempotencyKey === null ? {} : { "idempotency-key": idempotencyKey }),
          },
          ...(request.body === undefined || method === "GET" ? {} : { body: request.body }),
        });
        const text = await response.text();
        const what = `${method} ${request.path} ${request.body ?? ""} → ${response.status} ${text}`;
        expect(response.status, what).toBeLessThan(500);
        if (response.status < 400) return;
        expect(response.headers.get("content-type"), what).toBe("application/problem+json");
        const problem = JSON.parse(text);
        expect(problem.status, what).toBe(response.status);
        expect(typeof problem.title, what).toBe("string");
        if (response.status !== 422) return;
        expect(problem.errors.length, what).toBeGreaterThan(0);
        for (const error of problem.errors) {
          expect(typeof error.field === "string" && error.field.length > 0, what).toBe(true);
          expect(typeof error.message === "string" && error.message.length > 0, what).toBe(true);
          expect(error.message, what).not.toMatch(/^Invalid input|received undefined/);
        }
      }),
      { numRuns: 100, examples: KNOWN_HOSTILE.map((how): [Spoil, string | null] => [how, null]) },
    );
  });
});
