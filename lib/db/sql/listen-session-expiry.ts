import { sql } from "drizzle-orm";
import type { Database } from "../client.ts";

/**
 * Pushes a live listen session's expiry `ttlMs` from now. Returns false when
 * there is none to renew (deleted, expired, or not a listen session): an
 * expired session is over even if its row is still there.
 */
export async function renewListenSession(database: Database, webhookId: string, ttlMs: number): Promise<boolean> {
  const rows = await database.rows<{ id: string }>(sql`
    update webhook set expires_at = now() + ${ttlMs}::int * interval '1 millisecond'
    where id = ${webhookId} and status = 'listening' and expires_at > now()
    returning id
  `);
  return rows.length > 0;
}

/**
 * Deletes expired listen sessions (only `webhookId`'s, when given), with
 * their dispatches and attempts. Returns the ids deleted.
 */
export async function deleteExpiredListenSessions(database: Database, webhookId?: string): Promise<string[]> {
  const rows = await database.rows<{ id: string }>(sql`
    delete from webhook
    where status = 'listening' and expires_at <= now() and (${webhookId ?? null}::text is null or id = ${webhookId ?? null})
    returning id
  `);
  return rows.map((row) => row.id);
}
