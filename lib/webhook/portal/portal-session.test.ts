import { describe, expect, it } from "vitest";
import { openPortalSession, sealPortalSession } from "./portal-session.ts";

const KEY = "k".repeat(32);

describe("portal session tokens", () => {
  it("open to the session they seal, live until the second they end", async () => {
    const now = new Date("2026-12-01T09:30:00.000Z");
    const { token, session } = await sealPortalSession(KEY, {
      account: "acc_1",
      frameAncestors: ["https://app.example.com"],
      ttlSeconds: 60,
      now,
    });
    expect(session).toMatchObject({ account: "acc_1", expiresAt: new Date("2026-12-01T09:31:00.000Z") });
    expect(await openPortalSession(KEY, token, new Date("2026-12-01T09:30:59.999Z"))).toEqual({
      session,
      ended: false,
    });
    expect(await openPortalSession(KEY, token, new Date("2026-12-01T09:31:00.000Z"))).toEqual({ session, ended: true });
  });

  it("refuse a token sealed with another key, changed, or an API bearer token", async () => {
    const { token } = await sealPortalSession(KEY, {
      account: "acc_1",
      frameAncestors: ["https://a.example"],
      ttlSeconds: 60,
    });
    expect(await openPortalSession("x".repeat(32), token)).toBeUndefined();
    const [header, , signature] = token.split(".");
    const payload = Buffer.from(
      JSON.stringify({ account: "acc_2", fa: [], jti: "ps_x", iat: 1, exp: 9e9, aud: "hooklane-portal" }),
    ).toString("base64url");
    expect(await openPortalSession(KEY, `${header}.${payload}.${signature}`)).toBeUndefined();
    expect(await openPortalSession(KEY, "not-a-token")).toBeUndefined();
  });
});
