import { sql } from "drizzle-orm";
import type { Database } from "../client.ts";

/**
 * Deletes up to `limit` expired console sessions, up to `limit` expired
 * portal sessions (revoked or not: past `expires_at` neither signs anyone
 * in) and up to `limit` secret handovers nobody took; returns the largest
 * of the three counts.
 */
export async function pruneExpiredSessions(database: Database, limit: number): Promise<number> {
  const [consoleRows, portalRows, handoverRows] = await Promise.all([
    database.rows<{ one: number }>(sql`
      delete from console_session where id_hash in (
        select id_hash from console_session where expires_at <= now() limit ${limit}
      )
      returning 1 as one
    `),
    database.rows<{ one: number }>(sql`
      delete from portal_session where id in (
        select id from portal_session where expires_at <= now() limit ${limit}
      )
      returning 1 as one
    `),
    database.rows<{ one: number }>(sql`
      delete from secret_handover where id_hash in (
        select id_hash from secret_handover where expires_at <= now() limit ${limit}
      )
      returning 1 as one
    `),
  ]);
  return Math.max(consoleRows.length, portalRows.length, handoverRows.length);
}
