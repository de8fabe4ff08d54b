import { sql } from "drizzle-orm";
import type { Database } from "../client.ts";

/**
 * The first key of every listen-session lock, in the two-key form of advisory
 * locks (idempotency keys take 7_207_313, quotas 7_207_314, the claim's key 7_207_320).
 */
export const LISTEN_SESSION_LOCK_SPACE = 7_207_315;

/**
 * Takes `account`'s listen-session lock for the rest of `tx`'s transaction,
 * then reads whether the account exists and how many live (unexpired)
 * sessions it has. A count and the insert it allows, made under the lock in
 * one transaction, are exact: the next holder counts after the insert
 * committed or rolled back. The lock is a statement of its own so that, under
 * READ COMMITTED, the count's snapshot is taken once the lock is held. Keyed
 * by account: other accounts never wait (two sharing a hash only take turns).
 */
export async function lockListenSessions(
  tx: Database,
  account: string,
): Promise<{ accountExists: boolean; liveSessions: number }> {
  await tx.rows(sql`select pg_advisory_xact_lock(${LISTEN_SESSION_LOCK_SPACE}, hashtext(${account}))`);
  const [row] = await tx.rows<{ known: boolean; live: number }>(sql`
    select exists (select 1 from account where id = ${account}) as known,
      (select count(*)::int from webhook
        where account = ${account} and status = 'listening' and expires_at > now()) as live
  `);
  return { accountExists: row!.known, liveSessions: row!.live };
}
