import { and, eq, gt, sql } from "drizzle-orm";
import type { Database } from "../client.ts";
import { idempotencyKey, type IdempotencyKey } from "../schema.ts";

/**
 * The first key of every idempotency lock: the two-key form of advisory
 * locks lives apart from the one-key locks the migrator and the sync take.
 */
export const IDEMPOTENCY_LOCK_SPACE = 7_207_313;

/** How long a stored answer is replayed. */
export const IDEMPOTENCY_KEY_TTL_HOURS = 24;

/**
 * Takes the lock of (`account`, `key`) for the rest of `tx`'s transaction,
 * without waiting: false when another transaction holds it, i.e. a request
 * with that key is still running. Keys are visible ASCII without spaces, so
 * the space keeps every (account, key) pair distinct before hashing.
 */
export async function lockIdempotencyKey(tx: Database, account: string, key: string): Promise<boolean> {
  const [row] = await tx.rows<{ locked: boolean }>(
    sql`select pg_try_advisory_xact_lock(${IDEMPOTENCY_LOCK_SPACE}, hashtext(${account} || ' ' || ${key})) as locked`,
  );
  return row?.locked === true;
}

/** The unexpired answer stored for (`account`, `key`), if any. */
export async function findIdempotencyKey(
  database: Database,
  account: string,
  key: string,
): Promise<IdempotencyKey | undefined> {
  const [row] = await database.db
    .select()
    .from(idempotencyKey)
    .where(
      and(eq(idempotencyKey.account, account), eq(idempotencyKey.key, key), gt(idempotencyKey.expiresAt, sql`now()`)),
    );
  return row;
}

/** Stores the answer to (`account`, `key`) for 24 h, replacing an expired one. */
export async function storeIdempotencyKey(
  tx: Database,
  row: Omit<IdempotencyKey, "createdAt" | "expiresAt">,
): Promise<void> {
  const expiresAt = sql`now() + make_interval(hours => ${IDEMPOTENCY_KEY_TTL_HOURS})`;
  await tx.db
    .insert(idempotencyKey)
    .values({ ...row, expiresAt })
    .onConflictDoUpdate({
      target: [idempotencyKey.account, idempotencyKey.key],
      set: { ...row, createdAt: sql`now()`, expiresAt },
    });
}

/** Deletes up to `limit` expired keys; returns how many went. */
export async function pruneIdempotencyKeys(database: Database, limit: number): Promise<number> {
  const rows = await database.rows<{ key: string }>(sql`
    delete from idempotency_key where ctid in (
      select ctid from idempotency_key where expires_at <= now() limit ${limit}
    )
    returning key
  `);
  return rows.length;
}
