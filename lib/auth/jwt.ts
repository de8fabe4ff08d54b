import { createRemoteJWKSet, jwtVerify, SignJWT, type JWTVerifyGetKey } from "jose";
import { z } from "zod";

/** Who is calling: the token's subject, its account, and whether it is an admin. */
export interface Principal {
  sub: string;
  account: string;
  admin: boolean;
}

const claims = z.object({
  sub: z.string().min(1),
  account: z.string().min(1),
  role: z.string().optional(),
});

export type TokenVerifier = (token: string) => Promise<Principal>;

/** Verifies bearer JWTs: HS256 with a shared secret, or RS/ES keys from a JWKS URL. Throws on any invalid token. */
export function createTokenVerifier(options: { jwtSecret?: string; jwksUrl?: string }): TokenVerifier {
  const key: Uint8Array | JWTVerifyGetKey | undefined = options.jwksUrl
    ? createRemoteJWKSet(new URL(options.jwksUrl))
    : options.jwtSecret
      ? new TextEncoder().encode(options.jwtSecret)
      : undefined;
  if (!key) throw new Error("no AUTH_JWT_SECRET or AUTH_JWKS_URL configured");
  const algorithms = options.jwksUrl ? ["RS256", "ES256", "EdDSA"] : ["HS256"];
  return async (token) => {
    const { payload } = await jwtVerify(token, key as Uint8Array, { algorithms });
    const parsed = claims.parse(payload);
    return { sub: parsed.sub, account: parsed.account, admin: parsed.role === "admin" };
  };
}

/** Mints an HS256 token (development and tests). */
export async function mintToken(
  secret: string,
  principal: { sub: string; account: string; admin?: boolean },
  expiresIn = "12h",
): Promise<string> {
  return new SignJWT({ account: principal.account, ...(principal.admin ? { role: "admin" } : {}) })
    .setProtectedHeader({ alg: "HS256" })
    .setSubject(principal.sub)
    .setIssuedAt()
    .setExpirationTime(expiresIn)
    .sign(new TextEncoder().encode(secret));
}
