import { createRemoteJWKSet, errors, jwtVerify, SignJWT, type JWTVerifyGetKey } from "jose";
import { LRUCache } from "lru-cache";
import { z } from "zod";
import { textProblem } from "../api/input-text.ts";

/**
 * Who is calling: the token's subject, its account, and its role claim.
 * `admin` manages its own account and the global webhooks; `support` may
 * read, retry and recover any account's deliveries (never a secret, never a
 * change to a webhook), and every such action is audited.
 */
export interface Principal {
  sub: string;
  account: string;
  admin: boolean;
  support: boolean;
}

/** The token's `role` claim for a principal. */
export function roleOf(principal: { admin?: boolean; support?: boolean }): "admin" | "support" | undefined {
  return principal.admin ? "admin" : principal.support ? "support" : undefined;
}

const claims = z.object({
  sub: z.string().min(1),
  account: z.string().min(1),
  role: z.string().optional(),
  exp: z.number(),
  iat: z.number().optional(),
});

/**
 * A token the API does not accept. `description` says why in words safe to
 * send back (RFC 6750 `error_description`): it names the rule, never the
 * expected issuer, audience or key.
 */
export class TokenRejected extends Error {
  override name = "TokenRejected";
  readonly description: string;
  constructor(description: string, options?: ErrorOptions) {
    super(description, options);
    this.description = description;
  }
}

export type TokenVerifier = (token: string) => Promise<Principal>;

export interface TokenRules {
  jwtSecret?: string;
  jwksUrl?: string;
  /** `iss` must equal this when set. */
  issuer?: string;
  /** `aud` must contain this when set. */
  audience?: string;
  /** Longest accepted `exp - iat` (or `exp - now` without `iat`), in ms. */
  maxLifetimeMs: number;
  /** Verified tokens remembered (see `createTokenVerifier`); 0 verifies every request. Default 10,000. */
  cacheSize?: number;
}

/** Tokens longer than this are verified every time, never remembered: the cache holds at most 10,000 × 2 KiB. */
const CACHED_TOKEN_MAX_LENGTH = 2_048;
/**
 * How long a verdict is remembered at most, whatever the token's `exp`. With
 * a JWKS this bounds how long a key the provider withdrew still counts
 * (jose's own JWKS cache keeps one for up to 10 minutes).
 */
const CACHED_VERDICT_MAX_AGE_MS = 60_000;

/**
 * Verifies bearer JWTs: HS256 with a shared secret, or RS/ES/EdDSA keys from
 * a JWKS URL. Every token needs `exp`, a lifetime within `maxLifetimeMs`, and
 * the issuer and audience when configured. Throws TokenRejected for a token
 * that is not accepted; anything else it throws (the JWKS could not be
 * fetched) is not the token's fault.
 *
 * A token that verified is remembered, keyed by its whole text, until its
 * `exp` (at most a minute), so a client sending the same token again costs a
 * lookup, not a signature check. Only accepted tokens are stored: a token
 * that was refused is checked in full every time, so nothing an attacker
 * sends can put an entry there, and changing a token by one character makes
 * it another key. Nothing but `exp` can turn an accepted token's verdict
 * (the secret, issuer and audience are fixed; `nbf` and the lifetime rule only
 * loosen with time), and an entry is never served at or past its `exp`: the
 * token is then verified again and refused as jose refuses it. The cache is
 * bounded in entries and token length; the least recently used go first.
 */
export function createTokenVerifier(rules: TokenRules): TokenVerifier {
  const key: Uint8Array | JWTVerifyGetKey | undefined = rules.jwksUrl
    ? createRemoteJWKSet(new URL(rules.jwksUrl))
    : rules.jwtSecret
      ? new TextEncoder().encode(rules.jwtSecret)
      : undefined;
  if (!key) throw new Error("no AUTH_JWT_SECRET or AUTH_JWKS_URL configured");
  const options = {
    algorithms: rules.jwksUrl ? ["RS256", "ES256", "EdDSA"] : ["HS256"],
    requiredClaims: ["exp"],
    ...(rules.issuer ? { issuer: rules.issuer } : {}),
    ...(rules.audience ? { audience: rules.audience } : {}),
  };
  const maxLifetimeSeconds = rules.maxLifetimeMs / 1_000;
  const cacheSize = rules.cacheSize ?? 10_000;
  const verified =
    cacheSize > 0 ? new LRUCache<string, { principal: Principal; expMs: number }>({ max: cacheSize }) : undefined;
  const verify = async (token: string): Promise<{ principal: Principal; exp: number }> => {
    let payload: unknown;
    try {
      ({ payload } = await jwtVerify(token, key as Uint8Array, options));
    } catch (error) {
      throw rejection(error);
    }
    const parsed = claims.safeParse(payload);
    if (!parsed.success) throw new TokenRejected("The token lacks the sub or account claim.");
    const { exp, iat, sub, account, role } = parsed.data;
    // Refused here, so no route (nor PostgreSQL `text`, which refuses NUL) ever sees such a name.
    if ([sub, account, role].some((claim) => claim !== undefined && textProblem(claim, false) !== undefined)) {
      throw new TokenRejected("The token's sub, account or role claim holds a control character or invalid Unicode.");
    }
    // From its issue, or from now when it has no iat or claims one in the future.
    const now = Date.now() / 1_000;
    if (exp - Math.min(iat ?? now, now) > maxLifetimeSeconds) {
      throw new TokenRejected(`The token lives longer than the ${formatSeconds(maxLifetimeSeconds)} this API accepts.`);
    }
    const principal = Object.freeze({
      sub,
      account,
      admin: role === "admin",
      support: role === "support",
    });
    return { principal, exp };
  };
  return async (token) => {
    const now = Date.now();
    const hit = verified?.get(token);
    // jose refuses a token once `exp <= now` (in whole seconds): an entry is served only before that.
    if (hit && now < hit.expMs) return hit.principal;
    const { principal, exp } = await verify(token);
    if (verified && token.length <= CACHED_TOKEN_MAX_LENGTH) {
      const expMs = exp * 1_000;
      const ttl = Math.min(CACHED_VERDICT_MAX_AGE_MS, expMs - now);
      if (ttl > 0) verified.set(token, { principal, expMs }, { ttl });
    }
    return principal;
  };
}

/** jose's verdict as a TokenRejected, or the error itself when the token is not at fault. */
function rejection(error: unknown): unknown {
  const reject = (description: string) => new TokenRejected(description, { cause: error });
  if (error instanceof errors.JWTExpired) return reject("The token has expired.");
  if (error instanceof errors.JWTClaimValidationFailed) {
    if (error.claim === "exp") return reject("The token has no valid expiry (exp).");
    if (error.claim === "iss") return reject("The token comes from an issuer this API does not accept.");
    if (error.claim === "aud") return reject("The token is meant for another audience.");
    if (error.claim === "nbf") return reject("The token is not valid yet.");
    return reject("The token's claims are not valid.");
  }
  if (error instanceof errors.JWSSignatureVerificationFailed) return reject("The token's signature does not verify.");
  if (error instanceof errors.JOSEAlgNotAllowed || error instanceof errors.JOSENotSupported) {
    return reject("The token's algorithm is not accepted.");
  }
  if (error instanceof errors.JWKSNoMatchingKey || error instanceof errors.JWKSMultipleMatchingKeys) {
    return reject("No key of the identity provider matches the token.");
  }
  if (error instanceof errors.JWSInvalid || error instanceof errors.JWTInvalid)
    return reject("The token is malformed.");
  return error;
}

function formatSeconds(seconds: number): string {
  return seconds % 3_600 === 0 ? `${seconds / 3_600} h` : `${Math.round(seconds / 60)} min`;
}

/** Mints an HS256 token (development and tests), carrying `iss` and `aud` when given. */
export async function mintToken(
  secret: string,
  principal: { sub: string; account: string; admin?: boolean; support?: boolean },
  options: { expiresIn?: string; issuer?: string | undefined; audience?: string | undefined } = {},
): Promise<string> {
  const role = roleOf(principal);
  const token = new SignJWT({ account: principal.account, ...(role ? { role } : {}) })
    .setProtectedHeader({ alg: "HS256" })
    .setSubject(principal.sub)
    .setIssuedAt()
    .setExpirationTime(options.expiresIn ?? "12h");
  if (options.issuer) token.setIssuer(options.issuer);
  if (options.audience) token.setAudience(options.audience);
  return token.sign(new TextEncoder().encode(secret));
}
