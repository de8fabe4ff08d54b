import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openConsoleSession } from "../../lib/auth/console-session.ts";
import { sealPortalSession } from "../../lib/webhook/portal/portal-session.ts";
import { storePortalSession } from "../../lib/webhook/portal/portal-session-store.ts";
import { HARNESS_START_MS, pgliteFactory, startHarness, type Harness } from "../../test/support/harness.ts";
import { createApp } from "../app.ts";
import { hostileString } from "../../test/support/hostile-strings.ts";

const ACCOUNT = "acc_page_fuzz";

// ---------------------------------------------------------------------------
// What hostile or careless browsers, scripts and probes send to the pages.
// ---------------------------------------------------------------------------

const nastyString = hostileString([
  "",
  " ",
  "\u0000",
  "a\u0000b",
  "a\nb",
  "a\r\nSet-Cookie: x=1",
  "\ud800",
  "x\udfff",
  "\ufffd",
  "\u0085",
  "\u007f",
  "x".repeat(10_000),
  "💥",
  "evt_\u0000",
  "../../v3/accounts",
  "2026-02-30T00:00",
  "0000-01-01T00:00",
  "1e400",
  "-1",
  "24",
  "webhooks/wh_x",
  "javascript:alert(1)",
]);
/** Percent-encoding as sent on the wire, broken on purpose included. */
const rawEncoded = fc.constantFrom("%00", "a%0Ab", "%0D%0A", "%EF%BF%BD", "%ED%A0%80", "%FF", "%E0%A4%A", "%", "%ZZ");

/** Percent-encodes text; where it is not well-formed Unicode, its lone surrogates as their (invalid) UTF-8. */
function encode(text: string): string {
  return text.isWellFormed()
    ? encodeURIComponent(text)
    : [...text].map((char) => (char.isWellFormed() ? encodeURIComponent(char) : "%ED%A0%80")).join("");
}
/** A value as it would appear in a URL, a form or a cookie: encoded, or raw broken encoding. */
const wireValue = fc.oneof(nastyString.map(encode), rawEncoded);
/** Bytes a header may carry (Node's parser refuses NUL, CR and LF itself), read as latin1. */
const headerText = fc.oneof(
  wireValue,
  fc.string({ unit: fc.integer({ min: 0x20, max: 0xff }).map((unit) => String.fromCharCode(unit)), maxLength: 60 }),
);

const FIELDS = ["csrf", "token", "url", "description", "events", "filter", "scheme", "back", "hours"];
const QUERY_KEYS = ["cursor", "notice", "status", "eventType", "since", "until", "q"];
const COOKIES = [
  "hooklane_session",
  "__Host-hooklane_session",
  "hooklane_console",
  "hooklane_console_nonce",
  "__Host-hooklane_console_nonce",
];
/** A browser's nonce (the shape the console sets): the form token of `GET /console` is signed for it. */
const NONCE = "AAAAAAAAAAAAAAAAAAAAAA";

interface Valid {
  params: Record<string, string>;
  cookies: Record<string, string>;
  csrf: Record<"console" | "portal", string>;
}

/** One request to a page, with hostile parts chosen by fast-check. */
const pageRequest = (routes: readonly string[]) =>
  fc.record({
    route: fc.constantFrom(...routes),
    params: fc.dictionary(fc.constantFrom("id", "recoveryId", "session"), wireValue, { maxKeys: 3 }),
    query: fc.array(fc.tuple(fc.oneof(fc.constantFrom(...QUERY_KEYS), wireValue), wireValue), { maxLength: 4 }),
    cookies: fc.array(fc.tuple(fc.oneof(fc.constantFrom(...COOKIES), headerText), headerText), { maxLength: 3 }),
    // Mostly a signed-in browser posting from its own page, so the hostile parts reach the routes past the checks.
    signedIn: fc.oneof({ arbitrary: fc.constant(true), weight: 3 }, { arbitrary: fc.constant(false), weight: 1 }),
    validCsrf: fc.oneof({ arbitrary: fc.constant(true), weight: 3 }, { arbitrary: fc.constant(false), weight: 1 }),
    origin: fc.oneof(
      { arbitrary: fc.constant("http://localhost"), weight: 3 },
      { arbitrary: fc.constant(null), weight: 1 },
      { arbitrary: headerText, weight: 1 },
    ),
    body: fc.oneof(
      fc.record({
        kind: fc.constant("form" as const),
        fields: fc.array(fc.tuple(fc.oneof(fc.constantFrom(...FIELDS), wireValue), wireValue), { maxLength: 6 }),
      }),
      fc.record({
        kind: fc.constant("multipart" as const),
        fields: fc.array(fc.tuple(fc.oneof(fc.constantFrom(...FIELDS), nastyString), nastyString), { maxLength: 6 }),
        file: fc.option(fc.constantFrom(...FIELDS)),
      }),
      fc.record({
        kind: fc.constant("raw" as const),
        contentType: fc.oneof(
          fc.constantFrom(
            "multipart/form-data",
            "multipart/form-data; boundary=x",
            "application/x-www-form-urlencoded; charset=utf-16",
            "application/json",
            "text/plain",
          ),
          headerText,
        ),
        text: fc.oneof(nastyString, fc.constantFrom("--x\r\nContent-Disposition: form-data\r\n\r\nv", "a=%", "{")),
      }),
    ),
  });

type PageRequest = ReturnType<typeof pageRequest> extends fc.Arbitrary<infer T> ? T : never;

/** The request `how` describes, against the valid ids, cookies and form tokens in `valid`. */
function build(how: PageRequest, valid: Valid): { path: string; init: RequestInit } {
  const [method, pattern] = how.route.split(" ") as [string, string];
  const portal = pattern.startsWith("/console/portal/");
  const real = (name: string) => valid.params[name === "id" && pattern.includes("/dispatches/") ? "dispatch" : name];
  const path = pattern.replace(/:(\w+)/g, (_, name: string) => how.params[name] ?? real(name) ?? "x");
  const query = how.query.map(([key, value]) => `${key}=${value}`).join("&");
  const cookies = [
    ...(how.signedIn ? Object.entries(valid.cookies) : []),
    ...how.cookies.filter(([name]) => !/[;=\s]/.test(name)),
  ];
  const headers: Record<string, string> = {};
  if (cookies.length > 0) headers.cookie = cookies.map(([name, value]) => `${name}=${value}`).join("; ");
  if (how.origin !== null) headers.origin = how.origin;
  const csrf = how.validCsrf ? valid.csrf[portal ? "portal" : "console"] : undefined;
  let body: RequestInit["body"];
  if (how.body.kind === "form") {
    headers["content-type"] = "application/x-www-form-urlencoded";
    const fields = [...(csrf ? [["csrf", csrf]] : []), ...how.body.fields];
    body = fields.map(([key, value]) => `${key}=${value}`).join("&");
  } else if (how.body.kind === "multipart") {
    const form = new FormData();
    if (csrf) form.append("csrf", csrf);
    for (const [key, value] of how.body.fields) form.append(key, value);
    if (how.body.file) form.append(how.body.file, new Blob(["\u0000\ud800"]), "\u0000.txt");
    body = form;
  } else {
    headers["content-type"] = how.body.contentType;
    body = how.body.text;
  }
  return {
    path: `${path}${query ? `?${query}` : ""}`,
    init: { method, headers, ...(method === "GET" || method === "HEAD" ? {} : { body }) },
  };
}

// ---------------------------------------------------------------------------

describe("every console, portal and ops route, fed hostile input", () => {
  let harness: Harness;
  let app: ReturnType<typeof createApp>;
  let valid: Valid;
  const routes = (keep: (path: string) => boolean) => [
    ...new Set(app.routes.filter((r) => r.method !== "ALL" && keep(r.path)).map((r) => `${r.method} ${r.path}`)),
  ];

  beforeAll(async () => {
    harness = await startHarness(pgliteFactory, { lane: false });
    await harness.accounts(ACCOUNT);
    app = createApp(harness.hooklane);
    const as = { account: ACCOUNT };
    const webhook = await harness.call("POST", "/v3/webhooks", {
      ...as,
      body: { url: "http://127.0.0.1:4000/hook", events: ["*"] },
    });
    const dispatch = await harness.call("POST", `/v3/webhooks/${webhook.body.id}/test`, as);
    const recovery = await harness.call("POST", `/v3/webhooks/${webhook.body.id}/recover`, {
      ...as,
      body: { since: "2020-01-01T00:00:00Z" },
    });
    const signedIn = await openConsoleSession(
      harness.hooklane.database,
      { sub: "fuzzer", account: ACCOUNT, admin: false, support: false },
      new Date(Date.now() + 3_600_000),
    );
    const { token: session, session: stored } = await sealPortalSession(harness.hooklane.config.secretKey, {
      account: ACCOUNT,
      frameAncestors: ["https://app.example.com"],
      ttlSeconds: 3_600,
    });
    await storePortalSession(harness.hooklane.database, stored);
    const formToken = async (path: string, cookie: string) => {
      const html = await (await app.request(path, { headers: { cookie } })).text();
      const found = /name="csrf" value="([^"]+)"/.exec(html)?.[1];
      if (!found) throw new Error(`${path}: ${html.slice(0, 500)}`);
      return found;
    };
    const cookies = { hooklane_session: signedIn, hooklane_console_nonce: NONCE };
    const cookie = Object.entries(cookies)
      .map(([name, value]) => `${name}=${value}`)
      .join("; ");
    valid = {
      // `:id` names a webhook or a dispatch: either way a real one of the account's is tried.
      params: { id: webhook.body.id, dispatch: dispatch.body.id, recoveryId: recovery.body.id, session },
      cookies,
      csrf: {
        console: await formToken("/console", cookie),
        portal: await formToken(`/console/portal/${session}/webhooks/new`, ""),
      },
    };
  }, HARNESS_START_MS);
  afterAll(() => harness?.close());

  const neverServerError = async (how: PageRequest) => {
    const { path, init } = build(how, valid);
    const response = await app.request(path, init);
    const text = await response.text();
    expect(
      response.status,
      `${init.method} ${path} ${JSON.stringify(init.headers)} → ${text.slice(0, 300)}`,
    ).toBeLessThan(500);
  };

  /** Requests that once answered 500, tried on every route before the random ones. */
  const knownHostile = (routes: readonly string[]): Array<[PageRequest]> =>
    routes.flatMap((route) => [
      ...["%00", "a%0Ab", "%EF%BF%BD"].map((value): [PageRequest] => [
        {
          route,
          params: {},
          query: [],
          cookies: [],
          signedIn: false,
          validCsrf: true,
          origin: "http://localhost",
          body: { kind: "form", fields: [["token", value]] },
        },
      ]),
      [
        {
          route,
          params: {},
          query: [],
          cookies: [["hooklane_console", "%00"]],
          signedIn: false,
          validCsrf: true,
          origin: "http://localhost",
          body: { kind: "raw", contentType: "multipart/form-data; boundary=x", text: "garbage" },
        },
      ],
    ]);

  it.each([
    ["the console", (path: string) => path.startsWith("/console") && !path.startsWith("/console/portal/"), 400],
    ["a portal session's pages", (path: string) => path.startsWith("/console/portal/"), 300],
    ["ops and the reference", (path: string) => !path.startsWith("/console") && !path.startsWith("/v3/"), 100],
  ] as const)("%s: never 5xx, whatever the cookies, form, query and path hold", async (_, keep, numRuns) => {
    const table = routes(keep);
    expect(table.length).toBeGreaterThan(0);
    await fc.assert(fc.asyncProperty(pageRequest(table), neverServerError), {
      numRuns,
      examples: knownHostile(table),
    });
  });
});
