import { readMigrationFiles } from "drizzle-orm/migrator";
import type { Database } from "../db/client.ts";
import { MIGRATIONS_FOLDER } from "../db/migrations.ts";
import { readReadinessFacts } from "../db/sql/lane-snapshot.ts";
import { ReadTimeoutError } from "../db/sql/bounded-read.ts";
import { isConnectionError } from "../db/database-outage.ts";
import { errorFacts } from "../log/error-facts.ts";

export type CheckStatus = "ok" | "failing" | "unknown";

export interface Readiness {
  ready: boolean;
  /** The checks that failed, by name. */
  failing: string[];
  checks: {
    database: { status: CheckStatus; detail?: string };
    migrations: { status: CheckStatus; applied?: number; expected: number };
    lag: { status: CheckStatus; seconds?: number; thresholdSeconds: number | null };
    listener: { status: CheckStatus; channels: number; downSince?: string };
  };
}

let expectedMigration: number | undefined;

/** Probes that come while a read is running share it: a flood of public probes holds one connection. */
const running = new WeakMap<Database, ReturnType<typeof readReadinessFacts>>();

function sharedFacts(database: Database): ReturnType<typeof readReadinessFacts> {
  let read = running.get(database);
  if (!read) {
    read = readReadinessFacts(database).finally(() => running.delete(database));
    running.set(database, read);
  }
  return read;
}

/** When the newest committed migration was generated: what the database's last applied one must reach. */
function latestMigration(): number {
  expectedMigration ??= Math.max(
    ...readMigrationFiles({ migrationsFolder: MIGRATIONS_FOLDER }).map((m) => m.folderMillis),
  );
  return expectedMigration;
}

/**
 * Whether this process can do its job now, with one bounded read: the
 * database answers; every committed migration is applied; the oldest due
 * dispatch that should be moving is younger than `maxLagMs` (0: not
 * checked); this process's LISTEN session is up (or it listens to nothing).
 * A check that could not run for want of the database is `unknown`, not
 * failing: the database check names the cause. Calls made while a read
 * runs share it. Never throws.
 */
export async function checkReadiness(database: Database, options: { maxLagMs: number }): Promise<Readiness> {
  const expected = latestMigration();
  const listener = database.listenerHealth;
  const thresholdSeconds = options.maxLagMs > 0 ? options.maxLagMs / 1_000 : null;
  const checks: Readiness["checks"] = {
    database: { status: "ok" },
    migrations: { status: "unknown", expected },
    lag: { status: "unknown", thresholdSeconds },
    listener: {
      status: listener.up || listener.channels.length === 0 ? "ok" : "failing",
      channels: listener.channels.length,
      ...(listener.downSince ? { downSince: listener.downSince.toISOString() } : {}),
    },
  };
  try {
    const facts = await sharedFacts(database);
    const applied = facts.lastMigrationAt ?? 0;
    checks.migrations = { status: applied >= expected ? "ok" : "failing", applied, expected };
    const seconds = facts.oldestDueAt ? Math.max(0, (facts.at.getTime() - facts.oldestDueAt.getTime()) / 1_000) : 0;
    checks.lag = {
      status: thresholdSeconds === null || seconds <= thresholdSeconds ? "ok" : "failing",
      seconds: Math.round(seconds * 1_000) / 1_000,
      thresholdSeconds,
    };
  } catch (error) {
    // Only the kind of failure: this answer is public, and a driver's message may name hosts.
    const facts = errorFacts(error);
    const why = facts.code ?? facts.name;
    const detail =
      error instanceof ReadTimeoutError
        ? "no answer in time"
        : isConnectionError(error)
          ? `unreachable (${why})`
          : `the check's query failed (${why})`;
    checks.database = { status: "failing", detail };
  }
  const failing = Object.entries(checks)
    .filter(([, check]) => check.status === "failing")
    .map(([name]) => name);
  return { ready: failing.length === 0, failing, checks };
}
