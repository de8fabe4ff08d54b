import { and, eq, gt, isNull, sql } from "drizzle-orm";
import { createHash, randomBytes } from "node:crypto";
import type { Database } from "../db/client.ts";
import { consoleSession } from "../db/schema.ts";
import { roleOf, type Principal } from "./jwt.ts";

/** The longest a console sign-in lasts, whatever its token's `exp` says. */
export const CONSOLE_SESSION_MAX_MS = 12 * 3_600_000;

/** A session id as `openConsoleSession` makes it: 32 random bytes, base64url. Anything else is no session. */
const SESSION_ID = /^[A-Za-z0-9_-]{43}$/;

const hashOf = (id: string) => createHash("sha256").update(id).digest("base64url");

/**
 * Stores a new console session for `principal` (its subject, account and
 * role, never its token) until `expiresAt`, and returns its id: the only
 * copy, for the cookie. The row keeps the id's SHA-256 alone, so a reader of
 * the table cannot sign in with it.
 */
export async function openConsoleSession(database: Database, principal: Principal, expiresAt: Date): Promise<string> {
  const id = randomBytes(32).toString("base64url");
  await database.db.insert(consoleSession).values({
    idHash: hashOf(id),
    subject: principal.sub,
    account: principal.account,
    role: roleOf(principal) ?? null,
    expiresAt,
  });
  return id;
}

/**
 * The principal a live session signs in: undefined for an id that is
 * malformed, unknown, revoked or expired (by the database's clock).
 */
export async function findConsoleSession(database: Database, id: string | undefined): Promise<Principal | undefined> {
  if (!id || !SESSION_ID.test(id)) return undefined;
  const [row] = await database.db
    .select({ subject: consoleSession.subject, account: consoleSession.account, role: consoleSession.role })
    .from(consoleSession)
    .where(
      and(
        eq(consoleSession.idHash, hashOf(id)),
        isNull(consoleSession.revokedAt),
        gt(consoleSession.expiresAt, sql`now()`),
      ),
    );
  if (!row) return undefined;
  return { sub: row.subject, account: row.account, admin: row.role === "admin", support: row.role === "support" };
}

/** Ends a session for good (sign-out); a malformed or unknown id changes nothing. */
export async function revokeConsoleSession(database: Database, id: string | undefined): Promise<void> {
  if (!id || !SESSION_ID.test(id)) return;
  await database.db
    .update(consoleSession)
    .set({ revokedAt: sql`now()` })
    .where(and(eq(consoleSession.idHash, hashOf(id)), isNull(consoleSession.revokedAt)));
}
