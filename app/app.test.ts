import { SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mintToken } from "../lib/auth/jwt.ts";
import { DEVELOPMENT_JWT_SECRET } from "../lib/config/env.ts";
import { HARNESS_START_MS, pgliteFactory, startHarness, type Harness } from "../test/support/harness.ts";
import { createApp } from "./app.ts";

const LIMIT = 64 * 1_024;
const ISSUER = "https://idp.example.com/";
const AUDIENCE = "hooklane";

describe("the API's edge", () => {
  let harness: Harness;
  let app: ReturnType<typeof createApp>;
  let token: string;

  beforeAll(async () => {
    harness = await startHarness(pgliteFactory, {
      lane: false,
      env: { HTTP_BODY_LIMIT: "64kb", AUTH_JWT_ISSUER: ISSUER, AUTH_JWT_AUDIENCE: AUDIENCE },
    });
    await harness.accounts("acc_edge");
    app = createApp(harness.hooklane);
    token = await mintToken(
      DEVELOPMENT_JWT_SECRET,
      { sub: "edge", account: "acc_edge" },
      { issuer: ISSUER, audience: AUDIENCE },
    );
  }, HARNESS_START_MS);
  afterAll(() => harness?.close());

  const send = (
    method: string,
    path: string,
    init: { body?: RequestInit["body"]; headers?: Record<string, string> } = {},
  ) =>
    app.request(path, {
      method,
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json", ...init.headers },
      ...(init.body === undefined ? {} : { body: init.body, duplex: "half" }),
    } as RequestInit);
  // The problem document is checked with expect(); typing it would only repeat the assertions.
  const problemOf = async (response: Response): Promise<any> => {
    expect(response.headers.get("content-type")).toBe("application/problem+json");
    return response.json();
  };

  describe("bodies", () => {
    it("refuses a body whose Content-Length is over HTTP_BODY_LIMIT with 413", async () => {
      const body = "x".repeat(LIMIT + 1);
      const response = await send("POST", "/v3/payment-debts", {
        body,
        headers: { "content-length": String(LIMIT + 1) },
      });
      expect(response.status).toBe(413);
      expect(await problemOf(response)).toMatchObject({
        type: "https://hooklane.dev/errors/payload-too-large",
        code: "payload_too_large",
        status: 413,
        detail: `The body is larger than ${LIMIT} bytes.`,
        requestId: expect.stringMatching(/^req_/),
      });
    });

    it("stops reading a streamed body as soon as it passes the limit", async () => {
      let pulled = 0;
      const chunk = new Uint8Array(16 * 1_024).fill(0x5b);
      const body = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (pulled >= 5 * 1_048_576) return controller.close();
          pulled += chunk.length;
          controller.enqueue(chunk);
        },
      });
      const response = await send("POST", "/v3/payment-debts", { body });
      expect(response.status).toBe(413);
      expect((await problemOf(response)).code).toBe("payload_too_large");
      // At most the limit plus the chunk in hand, and what the stream had queued ahead.
      expect(pulled).toBeLessThanOrEqual(LIMIT + 4 * chunk.length);
    });

    it("refuses sign-in bodies over the limit too, before anything reads them", async () => {
      const response = await app.request("/console/login", {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", "content-length": String(LIMIT * 4) },
        body: "token=".padEnd(LIMIT * 4, "x"),
      });
      expect(response.status).toBe(413);
    });

    it("refuses JSON nested deeper than 64 levels with 400, and reads the rest as usual", async () => {
      const nested = (depth: number) => `${"[".repeat(depth)}${"]".repeat(depth)}`;
      const deep = await send("POST", "/v3/payment-debts", { body: nested(65) });
      expect(deep.status).toBe(400);
      expect(await problemOf(deep)).toMatchObject({
        code: "bad_request",
        type: "https://hooklane.dev/errors/bad-request",
        detail: "The body nests deeper than 64 levels.",
      });
      // Just under the byte limit, tens of thousands of levels deep: refused the same way, the stack untouched.
      expect((await send("PATCH", "/v3/webhooks/wh_1", { body: nested(LIMIT / 2 - 10) })).status).toBe(400);
      // 64 levels is a JSON document like any other: the route validates it.
      expect((await send("POST", "/v3/payment-debts", { body: nested(64) })).status).toBe(422);
      // Brackets inside strings are text.
      const text = JSON.stringify({ line1: "[{".repeat(90), city: "Lima", country: "PE" });
      expect((await send("POST", "/v3/general-addresses", { body: text })).status).toBe(201);
    });
  });

  describe("methods", () => {
    it("answers a known path with another method 405 and Allow, as a problem", async () => {
      const response = await send("PUT", "/v3/webhooks", { body: "{}" });
      expect(response.status).toBe(405);
      expect(response.headers.get("allow")).toBe("POST, GET, HEAD");
      expect(await problemOf(response)).toMatchObject({
        type: "https://hooklane.dev/errors/method-not-allowed",
        code: "method_not_allowed",
        status: 405,
      });
      const one = await send("POST", "/v3/webhooks/wh_123");
      expect(one.status).toBe(405);
      expect(one.headers.get("allow")).toBe("GET, HEAD, PATCH, DELETE");
      expect((await app.request("/health", { method: "DELETE" })).headers.get("allow")).toBe("GET, HEAD");
    });

    it("still answers 404 for an unknown path or object, and 401 before telling which methods exist", async () => {
      expect(await problemOf(await send("GET", "/v3/nothing-here"))).toMatchObject({ status: 404, code: "not_found" });
      expect(await problemOf(await send("GET", "/v3/webhooks/wh_0"))).toMatchObject({ status: 404, code: "not_found" });
      expect((await app.request("/v3/webhooks", { method: "PUT" })).status).toBe(401);
    });
  });

  describe("hosts", () => {
    it("answers only requests addressed to loopback while it listens on loopback (no DNS rebinding)", async () => {
      expect(harness.hooklane.config.host).toBe("127.0.0.1");
      for (const url of ["http://localhost/health", "http://127.0.0.1:3000/health", "http://[::1]:3000/health"]) {
        expect((await app.request(url)).status, url).toBe(200);
      }
      const rebound = await app.request("http://attacker.example:3000/v3/webhooks", {
        headers: { authorization: `Bearer ${token}` },
      });
      expect(rebound.status).toBe(403);
      expect(await problemOf(rebound)).toMatchObject({ code: "forbidden" });
      // Listening on every interface (HOST), any name may reach it.
      const exposed = createApp({ ...harness.hooklane, config: { ...harness.hooklane.config, host: "0.0.0.0" } });
      expect((await exposed.request("http://hooks.acme.com/health")).status).toBe(200);
    });
  });

  describe("tokens", () => {
    const now = () => Math.floor(Date.now() / 1_000);
    const signed = (claims: Record<string, unknown>) =>
      new SignJWT({ account: "acc_edge", iss: ISSUER, aud: AUDIENCE, ...claims })
        .setProtectedHeader({ alg: "HS256" })
        .setSubject("edge")
        .sign(new TextEncoder().encode(DEVELOPMENT_JWT_SECRET));
    const refusal = async (bearer: string | undefined) => {
      const response = await app.request(
        "/v3/webhooks",
        bearer ? { headers: { authorization: `Bearer ${bearer}` } } : {},
      );
      expect(response.status).toBe(401);
      expect((await problemOf(response)).code).toBe("unauthorized");
      return response.headers.get("www-authenticate");
    };

    it("asks for a token without blaming one when none was sent", async () => {
      expect(await refusal(undefined)).toBe('Bearer realm="hooklane"');
    });

    it.each([
      [
        "another issuer",
        { iss: "https://evil.example/", exp: now() + 600 },
        "The token comes from an issuer this API does not accept.",
      ],
      ["another audience", { aud: "billing", exp: now() + 600 }, "The token is meant for another audience."],
      ["no exp", {}, "The token has no valid expiry (exp)."],
      [
        "a lifetime over 24 h",
        { iat: now(), exp: now() + 7 * 86_400 },
        "The token lives longer than the 24 h this API accepts.",
      ],
      ["an expiry in the past", { exp: now() - 1 }, "The token has expired."],
    ])("refuses %s with 401 and WWW-Authenticate naming why", async (_, claims, description) => {
      expect(await refusal(await signed(claims))).toBe(
        `Bearer realm="hooklane", error="invalid_token", error_description="${description}"`,
      );
    });

    it("accepts a token with the configured issuer and audience", async () => {
      expect((await app.request("/v3/webhooks", { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
    });
  });
});
