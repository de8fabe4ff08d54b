import { and, eq, gt, isNull, sql } from "drizzle-orm";
import type { Database } from "../../db/client.ts";
import { portalSession } from "../../db/schema.ts";
import type { PortalSession } from "./portal-session.ts";

/** Records a session as it is sealed, so it can be listed, revoked and checked by the portal. */
export async function storePortalSession(database: Database, session: PortalSession): Promise<void> {
  await database.db.insert(portalSession).values({
    id: session.id,
    account: session.account,
    frameAncestors: session.frameAncestors,
    createdAt: session.createdAt,
    expiresAt: session.expiresAt,
  });
}

/** Rows still signing someone in: not revoked, not expired (by the database's clock). */
export const livePortalSession = () => and(isNull(portalSession.revokedAt), gt(portalSession.expiresAt, sql`now()`));

/**
 * Whether the session a portal URL seals is live: its row exists, belongs to
 * the sealed account and is neither revoked nor expired. A URL sealed before
 * sessions were stored has no row and is refused (it would live 1 h at most).
 */
export async function portalSessionIsLive(database: Database, session: PortalSession): Promise<boolean> {
  const [row] = await database.db
    .select({ id: portalSession.id })
    .from(portalSession)
    .where(and(eq(portalSession.id, session.id), eq(portalSession.account, session.account), livePortalSession()));
  return row !== undefined;
}

/**
 * Revokes one unexpired session of `account` (again, if it already was: the
 * time of the first revocation stays); returns its id, or undefined when
 * the account has no such session.
 */
export async function revokePortalSession(
  database: Database,
  account: string,
  id: string,
): Promise<string | undefined> {
  const [row] = await database.db
    .update(portalSession)
    .set({ revokedAt: sql`coalesce(${portalSession.revokedAt}, now())` })
    .where(and(eq(portalSession.id, id), eq(portalSession.account, account), gt(portalSession.expiresAt, sql`now()`)))
    .returning({ id: portalSession.id });
  return row?.id;
}

/** Revokes every live session of `account`; returns how many it ended. */
export async function revokeAllPortalSessions(database: Database, account: string): Promise<number> {
  const rows = await database.db
    .update(portalSession)
    .set({ revokedAt: sql`now()` })
    .where(and(eq(portalSession.account, account), livePortalSession()))
    .returning({ id: portalSession.id });
  return rows.length;
}
