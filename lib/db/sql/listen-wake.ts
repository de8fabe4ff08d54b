import { sql, type SQL } from "drizzle-orm";
import type { Database } from "../client.ts";

/**
 * The channel a listen session's streams hear: its payload is the session's
 * webhook id, sent whenever a dispatch of that session becomes due
 * (hooklane_route_events, restartRows, a test event). Only that session's
 * streams wake; an empty payload (the listener came back) wakes every one.
 */
export const LISTEN_WAKE_CHANNEL = "hooklane_listen";

/** Tells listen session `webhookId`'s streams to look now (at commit, inside a transaction). */
export async function notifyListenSession(database: Database, webhookId: string): Promise<void> {
  await database.rows(sql`select pg_notify(${LISTEN_WAKE_CHANNEL}, ${webhookId})`);
}

/** A statement's expression that tells webhook `webhookId`'s streams, if it is a listen session (null otherwise). */
export const wakeListenSession = (webhookId: SQL): SQL => sql`
  (select pg_notify(${LISTEN_WAKE_CHANNEL}, w.id) from webhook w where w.id = ${webhookId} and w.status = 'listening')`;
