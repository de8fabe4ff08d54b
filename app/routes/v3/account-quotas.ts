import type { ApiContext } from "../../../lib/api/handler.ts";
import { QuotaExceededError } from "../../../lib/api/problem.ts";
import type { Database } from "../../../lib/db/client.ts";
import type { RecoveryKind } from "../../../lib/db/schema.ts";
import {
  countOpenRecoveries,
  countWebhooks,
  listenSessionRoom,
  lockQuota,
  recentTestEvents,
  type QuotaLock,
} from "../../../lib/db/sql/account-usage.ts";
import { noSuchAccount } from "./tenancy.ts";

/** The insert a quota allows; it must use `tx` alone (see `withinQuota`). */
type Insert<T> = (tx: Database) => Promise<T>;

/**
 * What one account may ask of the lane (`WEBHOOK_QUOTA_*`), so no tenant can
 * hurt the others through the control plane. Each runs `insert` only when
 * the quota has room, and throws QuotaExceededError (429 with `Retry-After`)
 * otherwise. Exact under any concurrency: see `withinQuota`.
 */
export const accountQuotas = {
  /** Another webhook for `account` (null: the global ones). Deleting one makes room. */
  webhook<T>(c: ApiContext, account: string | null, insert: Insert<T>): Promise<T> {
    const limit = c.get("hooklane").config.quotas.webhooks;
    return withinQuota(c, account, "webhooks", insert, async (tx) => {
      if ((await countWebhooks(tx, account)) < limit) return;
      throw new QuotaExceededError(
        "webhooks",
        limit,
        `This account has ${limit} webhooks, its quota (WEBHOOK_QUOTA_WEBHOOKS); delete one first.`,
        60,
      );
    });
  },

  /** Another test event for one of `account`'s webhooks; the quota is per hour. */
  testEvent<T>(c: ApiContext, account: string | null, insert: Insert<T>): Promise<T> {
    const limit = c.get("hooklane").config.quotas.testEventsPerHour;
    return withinQuota(c, account, "test-events", insert, async (tx) => {
      const recent = await recentTestEvents(tx, account);
      if (recent.count < limit) return;
      throw new QuotaExceededError(
        "test-events",
        limit,
        `This account sent ${recent.count} test events in the last hour; its quota is ${limit} an hour.`,
        recent.oldestLeavesInSeconds,
      );
    });
  },

  /** Another live listen session for `account`, which must exist (422 otherwise). Ending or expiring one makes room. */
  listenSession<T>(c: ApiContext, account: string, insert: Insert<T>): Promise<T> {
    const { quotas, listenTtlMs } = c.get("hooklane").config;
    const limit = quotas.listenSessions;
    return withinQuota(c, account, "listen-sessions", insert, async (tx) => {
      const { accountExists, liveSessions } = await listenSessionRoom(tx, account);
      if (!accountExists) throw noSuchAccount();
      if (liveSessions < limit) return;
      throw new QuotaExceededError(
        "listen-sessions",
        limit,
        `This account has ${limit} live listen sessions, its quota (WEBHOOK_QUOTA_LISTEN_SESSIONS); end one first.`,
        listenTtlMs / 1_000,
      );
    });
  },

  /** Another bulk recovery (or resend, counted apart) while `account`'s others are unfinished. */
  recovery<T>(c: ApiContext, account: string | null, kind: RecoveryKind, insert: Insert<T>): Promise<T> {
    const limit = c.get("hooklane").config.quotas.openRecoveries;
    return withinQuota(c, account, kind, insert, async (tx) => {
      if ((await countOpenRecoveries(tx, account, kind)) < limit) return;
      throw new QuotaExceededError(
        "recoveries",
        limit,
        `This account has ${limit} recoveries still running, its quota; follow their progress and try again.`,
        30,
      );
    });
  },
};

/**
 * Counts and inserts in one transaction (a savepoint inside the request's
 * own), under the lock of `account`'s `quota`: concurrent requests of one
 * account take turns, each counting what the one before committed, so the
 * quota holds exactly; other accounts' requests never wait for the lock. It
 * is held until the outermost transaction ends. When `insert` throws,
 * everything rolls back and the count is as before. `insert` must run its
 * statements on `tx` only: one on another pooled connection could wait for a
 * connection while every other one waits for this lock.
 *
 * A waiter holds a pooled connection, so one account's burst would take the
 * whole pool and other accounts would queue behind all of it: outside a
 * request transaction, requests of this process also take turns per lock
 * before they ask for a connection, and hold one connection between them. A
 * request inside its own transaction has its connection already and goes
 * straight to the lock (so a turn never waits for a connection a waiter holds).
 */
async function withinQuota<T>(
  c: ApiContext,
  account: string | null,
  quota: QuotaLock,
  insert: Insert<T>,
  check: (tx: Database) => Promise<void>,
): Promise<T> {
  const database = c.get("database");
  const run = () =>
    database.transaction(async (tx) => {
      await lockQuota(tx, account, quota);
      await check(tx);
      return insert(tx);
    });
  if (database !== c.get("hooklane").database) return run();
  return inTurn(database, account === null ? quota : `${quota} ${account}`, run);
}

/** Per database and lock, the last request of this process to wait for its turn. */
const lastInLine = new WeakMap<Database, Map<string, Promise<unknown>>>();

/** Runs `fn` once every earlier `fn` of `key` on `database` has settled. */
async function inTurn<T>(database: Database, key: string, fn: () => Promise<T>): Promise<T> {
  let lines = lastInLine.get(database);
  if (!lines) lastInLine.set(database, (lines = new Map()));
  const mine = (lines.get(key) ?? Promise.resolve()).then(fn);
  const settled = mine.catch(() => {});
  lines.set(key, settled);
  try {
    return await mine;
  } finally {
    if (lines.get(key) === settled) lines.delete(key);
  }
}
