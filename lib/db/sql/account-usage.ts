import { sql } from "drizzle-orm";
import type { Database } from "../client.ts";
import type { RecoveryKind } from "../schema.ts";

/**
 * The first key of every quota lock, in the two-key form of advisory locks
 * (idempotency keys take 7_207_313, the claim's key locks 7_207_320).
 */
export const QUOTA_LOCK_SPACE = 7_207_314;

/** What a quota lock guards: one count of an account's. Recoveries and resends are counted apart. */
export type QuotaLock = "webhooks" | "test-events" | "listen-sessions" | RecoveryKind;

/**
 * Takes the lock of `account`'s `quota` for the rest of `tx`'s transaction,
 * waiting while another transaction holds it. A count and the insert it
 * allows, made under it in one transaction, are then exact: the next holder
 * counts after the insert committed (or rolled back). A statement of its own,
 * before the count: under READ COMMITTED the count's snapshot is taken once
 * the lock is held. Keyed by account and quota, so other accounts never wait;
 * two keys sharing a hash only take turns. Null (the global webhooks) hashes
 * apart from every account.
 */
export async function lockQuota(tx: Database, account: string | null, quota: QuotaLock): Promise<void> {
  await tx.rows(
    sql`select pg_advisory_xact_lock(${QUOTA_LOCK_SPACE}, hashtext(${quota} || coalesce(' ' || ${account}::text, '')))`,
  );
}

/** `account = $1`, where a null account means the global webhooks (one account, for quotas). */
const owned = (account: string | null) => (account === null ? sql`w.account is null` : sql`w.account = ${account}`);

/** Webhooks an account has (listen sessions are ephemeral and not counted). */
export async function countWebhooks(database: Database, account: string | null): Promise<number> {
  const [row] = await database.rows<{ n: number }>(sql`
    select count(*)::int as n from webhook w where ${owned(account)} and w.status <> 'listening' and w.deleted_at is null
  `);
  return row!.n;
}

/**
 * Test events the account's webhooks got in the last hour, and how many
 * seconds until the oldest of them leaves that hour.
 */
export async function recentTestEvents(
  database: Database,
  account: string | null,
): Promise<{ count: number; oldestLeavesInSeconds: number }> {
  const [row] = await database.rows<{ n: number; leaves: number | string | null }>(sql`
    select count(*)::int as n,
      extract(epoch from (min(d.created_at) + interval '1 hour' - now()))::float8 as leaves
    from webhook_dispatch d join webhook w on w.id = d.webhook_id
    where ${owned(account)} and d.event_type = 'webhook.test' and d.created_at > now() - interval '1 hour'
  `);
  return { count: row!.n, oldestLeavesInSeconds: Number(row!.leaves ?? 0) };
}

/** Bulk recoveries of the account's webhooks (or its resends) not completed yet. */
export async function countOpenRecoveries(
  database: Database,
  account: string | null,
  kind: RecoveryKind,
): Promise<number> {
  const [row] = await database.rows<{ n: number }>(sql`
    select count(*)::int as n
    from webhook_recovery r left join webhook w on w.id = r.webhook_id
    where (case when r.kind = 'resend' then r.account else w.account end) is not distinct from ${account}::text
      and r.kind = ${kind} and r.status <> 'completed'
  `);
  return row!.n;
}

/** Whether `account` exists, and its live (unexpired) listen sessions: read under its "listen-sessions" lock. */
export async function listenSessionRoom(
  database: Database,
  account: string,
): Promise<{ accountExists: boolean; liveSessions: number }> {
  const [row] = await database.rows<{ known: boolean; live: number }>(sql`
    select exists (select 1 from account where id = ${account}) as known,
      (select count(*)::int from webhook
        where account = ${account} and status = 'listening' and expires_at > now()) as live
  `);
  return { accountExists: row!.known, liveSessions: row!.live };
}
