import { createRemoteJWKSet, errors, jwtVerify, SignJWT, type JWTVerifyGetKey } from "jose";
import { z } from "zod";

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
}

/**
 * Verifies bearer JWTs: HS256 with a shared secret, or RS/ES/EdDSA keys from
 * a JWKS URL. Every token needs `exp`, a lifetime within `maxLifetimeMs`, and
 * the issuer and audience when configured. Throws TokenRejected for a token
 * that is not accepted; anything else it throws (the JWKS could not be
 * fetched) is not the token's fault.
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
  return async (token) => {
    let payload: unknown;
    try {
      ({ payload } = await jwtVerify(token, key as Uint8Array, options));
    } catch (error) {
      throw rejection(error);
    }
    const parsed = claims.safeParse(payload);
    if (!parsed.success) throw new TokenRejected("The token lacks the sub or account claim.");
    const { exp, iat } = parsed.data;
    // From its issue, or from now when it has no iat or claims one in the future.
    const now = Date.now() / 1_000;
    if (exp - Math.min(iat ?? now, now) > maxLifetimeSeconds) {
      throw new TokenRejected(`The token lives longer than the ${formatSeconds(maxLifetimeSeconds)} this API accepts.`);
    }
    const { role } = parsed.data;
    return { sub: parsed.data.sub, account: parsed.data.account, admin: role === "admin", support: role === "support" };
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
