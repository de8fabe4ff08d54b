import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sealPortalSession } from "../../../lib/webhook/portal/portal-session.ts";
import { storePortalSession } from "../../../lib/webhook/portal/portal-session-store.ts";
import { HARNESS_START_MS, pgliteFactory, startHarness, type Harness } from "../../../test/support/harness.ts";

const ACCOUNT = "acc_portal";
let harness: Harness;

beforeAll(async () => {
  harness = await startHarness(pgliteFactory, { lane: false });
  await harness.accounts(ACCOUNT);
}, HARNESS_START_MS);
afterAll(() => harness?.close());

const create = (frameAncestors: unknown) =>
  harness.call("POST", "/v3/portal-sessions", { account: ACCOUNT, body: { frameAncestors } });

/** The portal page's Content-Security-Policy, directive by directive, and its X-Frame-Options. */
async function portalHeaders(path: string) {
  const answer = await harness.request("GET", path);
  const policy = answer.headers.get("content-security-policy") ?? "";
  const directives = policy.split(";").map((directive) => directive.trim());
  return {
    status: answer.status,
    directives,
    frameAncestors: directives.filter((directive) => directive.startsWith("frame-ancestors")),
    xFrameOptions: answer.headers.get("x-frame-options"),
  };
}

describe("POST /v3/portal-sessions frameAncestors", () => {
  it("refuses directive injection and wildcard framing with a 422 naming each entry", async () => {
    const answer = await create([
      "https://app.example.com",
      "https://x;report-uri",
      "https://*",
      "https://a.example https://b.example",
      "https://a.example,https://b.example",
      "'unsafe-inline'",
      "https://*.com",
      "http://app.example.com",
      "https://app.example.com/embed",
      "https://app.example.com\r\nX-Injected: 1",
    ]);
    expect(answer.status, answer.text).toBe(422);
    expect(answer.headers.get("content-type")).toBe("application/problem+json");
    expect(answer.body.errors).toEqual([
      { field: "frameAncestors[1]", message: 'must be https://host[:port]: ";" is not allowed' },
      {
        field: "frameAncestors[2]",
        message:
          "may use a wildcard only as a leading *. before a domain of two labels or more, e.g. https://*.example.com",
      },
      {
        field: "frameAncestors[3]",
        message: "must be https://host[:port]: whitespace and control characters (U+0020) are not allowed",
      },
      { field: "frameAncestors[4]", message: 'must be https://host[:port]: "," is not allowed' },
      { field: "frameAncestors[5]", message: `must be https://host[:port]: "'" is not allowed` },
      {
        field: "frameAncestors[6]",
        message:
          "may use a wildcard only as a leading *. before a domain of two labels or more, e.g. https://*.example.com",
      },
      { field: "frameAncestors[7]", message: "must be https://host[:port] (http:// only for localhost and 127.0.0.1)" },
      { field: "frameAncestors[8]", message: "must be an origin, https://host[:port], with nothing after it" },
      {
        field: "frameAncestors[9]",
        message: "must be https://host[:port]: whitespace and control characters (U+000D) are not allowed",
      },
    ]);
  });

  it("accepts origins and a subdomain wildcard, and writes them to the portal's CSP exactly", async () => {
    const answer = await create([
      "https://App.Example.com:443/",
      "https://*.example.net",
      "https://app.example.com",
      "https://embed.example.org:8443",
      "http://localhost:3000",
    ]);
    expect(answer.status, answer.text).toBe(201);
    const written = [
      "https://app.example.com",
      "https://*.example.net",
      "https://embed.example.org:8443",
      "http://localhost:3000",
    ];
    expect(answer.body.frameAncestors).toEqual(written);
    const page = await portalHeaders(new URL(answer.body.url).pathname);
    expect(page.status).toBe(200);
    expect(page.frameAncestors).toEqual([`frame-ancestors ${written.join(" ")}`]);
    expect(page.directives).toHaveLength(7);
    expect(page.xFrameOptions).toBeNull();
  });
});

describe("the portal's frame-ancestors", () => {
  const seal = async (frameAncestors: string[]) => {
    const { token, session } = await sealPortalSession(harness.hooklane.config.secretKey, {
      account: ACCOUNT,
      frameAncestors,
      ttlSeconds: 60,
    });
    await storePortalSession(harness.hooklane.database, session);
    return portalHeaders(`/console/portal/${token}`);
  };

  it("never writes an entry the API would refuse, even from a session sealed with one", async () => {
    const page = await seal(["https://x;report-uri", "https://*", "https://ok.example", "https://OK.example", "*"]);
    expect(page.status).toBe(200);
    expect(page.frameAncestors).toEqual(["frame-ancestors https://ok.example"]);
    expect(page.directives).toHaveLength(7);
    expect(page.directives.join(";")).not.toContain("report-uri");
  });

  it("stays unframeable when no entry is left", async () => {
    const page = await seal(["https://x;report-uri", "https://*", "'self'", "https://a.example/$'"]);
    expect(page.frameAncestors).toEqual(["frame-ancestors 'none'"]);
    expect(page.xFrameOptions).toBe("DENY");
  });
});
