import { jwtVerify, SignJWT } from "jose";
import { hkdfSync, randomBytes } from "node:crypto";

/** A portal session: the console for one account, for a while, embeddable by the origins it names. */
export interface PortalSession {
  /** `ps_…` */
  id: string;
  account: string;
  /** Origins allowed to frame it (`frame-ancestors`). */
  frameAncestors: string[];
  expiresAt: Date;
  createdAt: Date;
}

const AUDIENCE = "hooklane-portal";
const keys = new Map<string, Uint8Array>();

/** A key of its own for portal sessions, derived from WEBHOOK_SECRET_KEY: the same on every API instance. */
function portalKey(secretKey: string): Uint8Array {
  let key = keys.get(secretKey);
  if (!key) {
    key = new Uint8Array(hkdfSync("sha256", secretKey, "", "hooklane portal session", 32));
    keys.set(secretKey, key);
  }
  return key;
}

/**
 * Seals a session into the token its URL carries (a JWT signed with the
 * portal key, audience `hooklane-portal`, so no bearer token of the API's is
 * ever one). It ends at `expiresAt` whatever happens; the portal also
 * requires its stored row to be live (`portal-session-store.ts`), so it can
 * be revoked sooner.
 */
export async function sealPortalSession(
  secretKey: string,
  input: { account: string; frameAncestors: string[]; ttlSeconds: number; now?: Date },
): Promise<{ token: string; session: PortalSession }> {
  const now = input.now ?? new Date();
  const issuedAt = Math.floor(now.getTime() / 1_000);
  const session: PortalSession = {
    id: `ps_${randomBytes(16).toString("hex")}`,
    account: input.account,
    frameAncestors: input.frameAncestors,
    createdAt: new Date(issuedAt * 1_000),
    expiresAt: new Date((issuedAt + input.ttlSeconds) * 1_000),
  };
  const token = await new SignJWT({ account: session.account, fa: session.frameAncestors })
    .setProtectedHeader({ alg: "HS256" })
    .setJti(session.id)
    .setAudience(AUDIENCE)
    .setIssuedAt(issuedAt)
    .setExpirationTime(issuedAt + input.ttlSeconds)
    .sign(portalKey(secretKey));
  return { token, session };
}

/**
 * The session a token seals, and whether it has ended; `undefined` for a
 * token this server did not seal. An ended session is still returned, so its
 * page can say it ended inside the frame that embeds it.
 */
export async function openPortalSession(
  secretKey: string,
  token: string,
  now = new Date(),
): Promise<{ session: PortalSession; ended: boolean } | undefined> {
  try {
    // The signature is checked here and the expiry below, against `now`.
    const { payload } = await jwtVerify(token, portalKey(secretKey), {
      audience: AUDIENCE,
      algorithms: ["HS256"],
      currentDate: new Date(0),
      requiredClaims: ["jti", "exp", "iat"],
    });
    const { account, fa } = payload as { account?: unknown; fa?: unknown };
    if (typeof account !== "string" || !Array.isArray(fa) || !fa.every((o) => typeof o === "string")) return undefined;
    const session: PortalSession = {
      id: payload.jti!,
      account,
      frameAncestors: fa as string[],
      createdAt: new Date(payload.iat! * 1_000),
      expiresAt: new Date(payload.exp! * 1_000),
    };
    return { session, ended: now >= session.expiresAt };
  } catch {
    return undefined;
  }
}
