import { exportJWK, generateKeyPair, SignJWT } from "jose";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { startReceiver, type TestReceiver } from "../../test/support/receiver.ts";
import { createTokenVerifier, mintToken, TokenRejected } from "./jwt.ts";

const SECRET = "a-test-secret-of-at-least-32-characters!";
const DAY_MS = 86_400_000;
const key = new TextEncoder().encode(SECRET);
const principal = { sub: "user_1", account: "acc_1" };

/** Why `verify` refuses `token`: the TokenRejected description, or "accepted". */
async function verdict(verify: (token: string) => Promise<unknown>, token: string): Promise<string> {
  try {
    await verify(token);
    return "accepted";
  } catch (error) {
    if (error instanceof TokenRejected) return error.description;
    throw error;
  }
}

describe("bearer tokens signed with the shared secret", () => {
  const verify = createTokenVerifier({ jwtSecret: SECRET, maxLifetimeMs: DAY_MS });
  const strict = createTokenVerifier({
    jwtSecret: SECRET,
    issuer: "https://idp.example.com/",
    audience: "hooklane",
    maxLifetimeMs: DAY_MS,
  });
  const now = () => Math.floor(Date.now() / 1_000);
  const signed = (claims: Record<string, unknown>) =>
    new SignJWT({ account: "acc_1", ...claims }).setProtectedHeader({ alg: "HS256" }).setSubject("user_1").sign(key);

  it("accepts what npm run token mints, with the issuer and audience when they are required", async () => {
    expect(await verify(await mintToken(SECRET, { ...principal, admin: true }))).toEqual({
      sub: "user_1",
      account: "acc_1",
      admin: true,
      support: false,
    });
    expect(await verify(await mintToken(SECRET, { ...principal, support: true }))).toMatchObject({
      admin: false,
      support: true,
    });
    const token = await mintToken(SECRET, principal, { issuer: "https://idp.example.com/", audience: "hooklane" });
    expect(await verdict(strict, token)).toBe("accepted");
  });

  it.each([
    ["no exp", {}, "The token has no valid expiry (exp)."],
    ["a string exp", { exp: "tomorrow" }, "The token has no valid expiry (exp)."],
    ["an exp in the past", { exp: now() - 60 }, "The token has expired."],
    [
      "a lifetime of 30 days",
      { iat: now(), exp: now() + 30 * 86_400 },
      "The token lives longer than the 24 h this API accepts.",
    ],
    [
      "no iat and 2 days to live",
      { exp: now() + 2 * 86_400 },
      "The token lives longer than the 24 h this API accepts.",
    ],
    [
      "an iat in the future to hide a year's lifetime",
      { iat: now() + 365 * 86_400, exp: now() + 365 * 86_400 + 60 },
      "The token lives longer than the 24 h this API accepts.",
    ],
    ["an nbf in the future", { exp: now() + 600, nbf: now() + 300 }, "The token is not valid yet."],
    ["no account", { exp: now() + 600, account: undefined }, "The token lacks the sub or account claim."],
    ...[
      ["a NUL in its account", { account: "acc_\u0000" }],
      ["a line break in its account", { account: "acc_1\r\nacc_2" }],
      ["a lone surrogate in its account", { account: "acc_\ud800" }],
      ["a C1 control in its role", { role: "admin\u0085" }],
    ].map(([what, claims]) => [
      what,
      { exp: now() + 600, ...(claims as object) },
      "The token's sub, account or role claim holds a control character or invalid Unicode.",
    ]),
  ] as Array<[string, Record<string, unknown>, string]>)("refuses a token with %s", async (_, claims, description) => {
    expect(await verdict(verify, await signed(claims))).toBe(description);
  });

  it("refuses another issuer, another audience, or none, when they are configured", async () => {
    const exp = now() + 600;
    expect(await verdict(strict, await signed({ exp, iss: "https://evil.example/", aud: "hooklane" }))).toBe(
      "The token comes from an issuer this API does not accept.",
    );
    expect(await verdict(strict, await signed({ exp, iss: "https://idp.example.com/", aud: "billing" }))).toBe(
      "The token is meant for another audience.",
    );
    expect(await verdict(strict, await signed({ exp }))).toBe(
      "The token comes from an issuer this API does not accept.",
    );
  });

  it("refuses a forged signature, another algorithm, and garbage", async () => {
    expect(await verdict(verify, await mintToken("another-secret-of-at-least-32-characters", principal))).toBe(
      "The token's signature does not verify.",
    );
    const unsigned = `${Buffer.from('{"alg":"none"}').toString("base64url")}.${Buffer.from(
      JSON.stringify({ sub: "x", account: "acc_1", exp: now() + 60 }),
    ).toString("base64url")}.`;
    expect(await verdict(verify, unsigned)).toBe("The token's algorithm is not accepted.");
    expect(await verdict(verify, "not-a-jwt")).toBe("The token is malformed.");
  });

  it("refuses a validly signed subject holding a control character", async () => {
    expect(await verdict(verify, await mintToken(SECRET, { sub: "user\u0000", account: "acc_1" }))).toBe(
      "The token's sub, account or role claim holds a control character or invalid Unicode.",
    );
  });
});

describe("verified tokens remembered", () => {
  const now = () => Math.floor(Date.now() / 1_000);
  const signed = (claims: Record<string, unknown>) =>
    new SignJWT({ account: "acc_1", ...claims }).setProtectedHeader({ alg: "HS256" }).setSubject("user_1").sign(key);
  afterEach(() => void vi.useRealTimers());

  it("answers a token again from memory (the same principal object) until its exp, then refuses it as jose does", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    const verify = createTokenVerifier({ jwtSecret: SECRET, maxLifetimeMs: DAY_MS });
    const token = await signed({ exp: now() + 2 });
    const first = await verify(token);
    expect(await verify(token)).toBe(first);
    expect(Object.isFrozen(first)).toBe(true);
    vi.setSystemTime(Date.now() + 2_000);
    expect(await verdict(verify, token)).toBe("The token has expired.");
  });

  it("never remembers a refused token, nor serves a remembered one for a token that differs by one character", async () => {
    const verify = createTokenVerifier({ jwtSecret: SECRET, maxLifetimeMs: DAY_MS });
    const token = await signed({ exp: now() + 600 });
    expect(await verdict(verify, token)).toBe("accepted");
    // The signature's first character (every bit of it is signature: the last one's low bits are padding, so
    // changing only those would decode to the same signature).
    const at = token.lastIndexOf(".") + 1;
    const tampered = `${token.slice(0, at)}${token[at] === "A" ? "B" : "A"}${token.slice(at + 1)}`;
    expect(await verdict(verify, tampered)).toBe("The token's signature does not verify.");
    expect(await verdict(verify, tampered)).toBe("The token's signature does not verify.");
    const forged = await mintToken("another-secret-of-at-least-32-characters", principal);
    expect(await verdict(verify, forged)).toBe("The token's signature does not verify.");
    expect(await verdict(verify, forged)).toBe("The token's signature does not verify.");
  });

  it("is bounded: the least recently used token and tokens over 2 KiB are verified again", async () => {
    const verify = createTokenVerifier({ jwtSecret: SECRET, maxLifetimeMs: DAY_MS, cacheSize: 2 });
    const [a, b, c] = await Promise.all([1, 2, 3].map((n) => signed({ exp: now() + 600, n })));
    const first = await verify(a!);
    await verify(b!);
    await verify(c!);
    const again = await verify(a!);
    expect(again).not.toBe(first);
    expect(again).toEqual(first);
    const long = await signed({ exp: now() + 600, pad: "x".repeat(2_048) });
    expect(await verify(long)).not.toBe(await verify(long));
  });
});

describe("bearer tokens signed by an identity provider (JWKS)", () => {
  let idp: TestReceiver;
  let privateKey: Awaited<ReturnType<typeof generateKeyPair>>["privateKey"];
  const signed = (audience: string) =>
    new SignJWT({ account: "acc_1" })
      .setProtectedHeader({ alg: "RS256", kid: "k1" })
      .setSubject("user_1")
      .setIssuer("https://idp.example.com/")
      .setAudience(audience)
      .setIssuedAt()
      .setExpirationTime("10m")
      .sign(privateKey);

  beforeAll(async () => {
    const pair = await generateKeyPair("RS256");
    privateKey = pair.privateKey;
    const jwks = JSON.stringify({ keys: [{ ...(await exportJWK(pair.publicKey)), kid: "k1", alg: "RS256" }] });
    idp = await startReceiver(() => ({ headers: { "content-type": "application/json" }, body: jwks }));
  });
  afterAll(() => idp?.close());

  it("accepts a token for this API and refuses one the same provider issued for another application", async () => {
    const verify = createTokenVerifier({
      jwksUrl: `${idp.url}/jwks.json`,
      issuer: "https://idp.example.com/",
      audience: "hooklane",
      maxLifetimeMs: DAY_MS,
    });
    expect(await verdict(verify, await signed("hooklane"))).toBe("accepted");
    expect(await verdict(verify, await signed("another-app"))).toBe("The token is meant for another audience.");
  });

  it("does not blame the token when the provider's keys cannot be fetched", async () => {
    const verify = createTokenVerifier({ jwksUrl: "http://127.0.0.1:9/jwks.json", maxLifetimeMs: DAY_MS });
    const error = await verify(await signed("hooklane")).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect(error).not.toBeInstanceOf(TokenRejected);
  });
});
