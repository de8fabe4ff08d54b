import { sql } from "drizzle-orm";
import type { Database } from "../client.ts";
import type { RecoveryKind } from "../schema.ts";

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
  kind: RecoveryKind = "recover",
): Promise<number> {
  const [row] = await database.rows<{ n: number }>(sql`
    select count(*)::int as n
    from webhook_recovery r left join webhook w on w.id = r.webhook_id
    where (case when r.kind = 'resend' then r.account else w.account end) is not distinct from ${account}::text
      and r.kind = ${kind} and r.status <> 'completed'
  `);
  return row!.n;
}
