import { fileURLToPath } from "node:url";
import { sql } from "drizzle-orm";
import { readMigrationFiles } from "drizzle-orm/migrator";
// Imported, not read from disk: a function bundle is traced from its imports, and always carries it.
import journal from "../../drizzle/meta/_journal.json" with { type: "json" };
import { errorFacts } from "../log/error-facts.ts";
import type { Database } from "./client.ts";

/** The committed migrations (drizzle-kit's folder and journal). */
export const MIGRATIONS_FOLDER = fileURLToPath(new URL("../../drizzle", import.meta.url));

/** What ops run to bring a database up to date; named by every error that asks for it. */
export const MIGRATE_COMMAND = "npm run db:migrate";

/** The advisory lock key that serialises concurrent migrators (API + N workers starting together); any constant will do. */
export const MIGRATION_LOCK = 7_207_311;

/** The database's schema is older than this code: a migration was not run. */
export class SchemaBehindError extends Error {
  override name = "SchemaBehindError";
  /** The newest migration the database has, or null when it has none. */
  readonly applied: string | null;
  /** The newest migration this code needs. */
  readonly needed: string;
  constructor(applied: string | null, needed: string) {
    super(
      `the database schema is behind this code: it has ${applied ?? "no migration"}, this code needs ${needed}. ` +
        `Run \`${MIGRATE_COMMAND}\` with DATABASE_URL_UNPOOLED (or DATABASE_URL) set to the direct connection string.`,
    );
    this.applied = applied;
    this.needed = needed;
  }
}

/**
 * Applies pending migrations — drizzle's table, drizzle's bookkeeping — in
 * one transaction that first takes a transaction-scoped advisory lock, so
 * migrators starting together run one after the other, and the lock cannot
 * outlive its transaction or be released on another server connection (as
 * a session lock can behind a transaction-mode pooler). `migrations`: the
 * committed ones, or a prefix of them (a database left behind, in tests).
 *
 * A `CREATE INDEX CONCURRENTLY` (for a table that may already be large:
 * writes go on while it builds) cannot run in a transaction: it is left out
 * of it and built after it commits (`ensureConcurrentIndexes`), by every
 * migrator, until the index is there and valid. With `concurrently: false`
 * (the embedded database, where nothing writes beside the migrator) it is
 * built in the transaction like any other statement.
 */
export async function applyMigrations(
  database: Database,
  migrations = readMigrationFiles({ migrationsFolder: MIGRATIONS_FOLDER }),
  options: { concurrently?: boolean } = {},
): Promise<void> {
  const concurrently = options.concurrently ?? true;
  await database.transaction(async (tx) => {
    await tx.rows(sql`select pg_advisory_xact_lock(${MIGRATION_LOCK})`);
    await tx.rows(sql`create schema if not exists drizzle`);
    await tx.rows(sql`
      create table if not exists drizzle.__drizzle_migrations (id serial primary key, hash text not null, created_at bigint)
    `);
    const [first] = await tx.rows<{ created_at: string | number }>(
      sql`select created_at from drizzle.__drizzle_migrations order by created_at limit 1`,
    );
    refuseOlderHistory(first ? Number(first.created_at) : null, migrations[0]?.folderMillis);
    const [last] = await tx.rows<{ created_at: string | number }>(
      sql`select created_at from drizzle.__drizzle_migrations order by created_at desc limit 1`,
    );
    for (const migration of migrations) {
      if (last && Number(last.created_at) >= migration.folderMillis) continue;
      for (const statement of migration.sql) {
        const index = concurrentIndex(statement);
        if (index && concurrently) continue;
        await tx.rows(sql.raw(index ? index.inTransaction : statement));
      }
      await tx.rows(sql`
        insert into drizzle.__drizzle_migrations (hash, created_at) values (${migration.hash}, ${migration.folderMillis})
      `);
    }
  });
  if (concurrently) await ensureConcurrentIndexes(database, migrations);
}

/** A `CREATE [UNIQUE] INDEX CONCURRENTLY` statement: the index's name, and the statement fit for each way of running it. */
export interface ConcurrentIndex {
  name: string;
  /** Outside a transaction, with IF NOT EXISTS: safe to run again. */
  concurrent: string;
  /** The same index built in a transaction (without CONCURRENTLY), where nothing writes beside the migrator. */
  inTransaction: string;
}

const CONCURRENT_INDEX = /^(\s*CREATE\s+(?:UNIQUE\s+)?INDEX\s+)CONCURRENTLY\s+(IF\s+NOT\s+EXISTS\s+)?("[^"]+"|\w+)/i;

/** The concurrent index a migration statement creates, if it creates one. */
export function concurrentIndex(statement: string): ConcurrentIndex | undefined {
  const code = statement.replace(/^(\s*--[^\n]*\n)+/, "");
  const match = CONCURRENT_INDEX.exec(code);
  if (!match) return undefined;
  const [whole, create, , quoted] = match;
  const rest = code.slice(whole!.length);
  return {
    name: quoted!.replaceAll('"', ""),
    concurrent: `${create}CONCURRENTLY IF NOT EXISTS ${quoted}${rest}`,
    inTransaction: `${create}IF NOT EXISTS ${quoted}${rest}`,
  };
}

/** The session advisory lock a migrator holds while it builds concurrent indexes: one builder at a time. */
export const INDEX_BUILD_LOCK = 7_207_315;

/** How long a migrator waits for another one's concurrent index builds, at most, and how often it looks. */
const OTHER_BUILDS_WAIT_MS = 600_000;
const OTHER_BUILDS_LOOK_MS = 100;

/** One server connection of a pool (node-postgres and Neon's driver share this surface). */
interface PooledClient {
  query<T>(text: string, values?: unknown[]): Promise<{ rows: T[] }>;
  release(destroy?: boolean): void;
}

/**
 * Builds every concurrent index of the applied migrations that is missing,
 * and builds again one a failed or killed build left invalid. When all are
 * there and valid this costs one catalogue read. Otherwise the builds run
 * on one connection holding a session advisory lock (`INDEX_BUILD_LOCK`),
 * taken by polling `pg_try_advisory_lock`, so migrators build one after the
 * other: two builds at once wait for each other's transactions and one is
 * ended as a deadlock, and two migrators meeting one invalid index would
 * both drop it. A migrator that gets the lock after another finds its
 * indexes valid and builds nothing. The lock is released when the builds
 * end, or with the connection if the process dies; a waiter never blocks
 * inside a statement (a concurrent build waits for every statement older
 * than its snapshot, and would wait for a blocked one forever).
 */
export async function ensureConcurrentIndexes(
  database: Database,
  migrations = readMigrationFiles({ migrationsFolder: MIGRATIONS_FOLDER }),
): Promise<void> {
  const indexes = migrations.flatMap((m) => m.sql.map(concurrentIndex).filter((i) => i !== undefined));
  const valid = sql`
    select c.relname as name from pg_class c join pg_index i on i.indexrelid = c.oid
    where c.relnamespace = 'public'::regnamespace and i.indisvalid and c.relname = any (${`{${indexes.map((i) => i.name).join(",")}}`}::text[])
  `;
  const built = new Set((await database.rows<{ name: string }>(valid)).map((row) => row.name));
  if (indexes.every((index) => built.has(index.name))) return;

  const pool = (database.db as unknown as { $client: { connect(): Promise<PooledClient> } }).$client;
  const client = await pool.connect();
  // Failures read like drizzle's: the statement, and the driver's error as the cause.
  const run = async <T>(text: string, values?: unknown[]): Promise<T[]> => {
    try {
      return (await client.query<T>(text, values)).rows;
    } catch (error) {
      throw new Error(`Failed query: ${text}`, { cause: error });
    }
  };
  let clean = false;
  try {
    const deadline = Date.now() + OTHER_BUILDS_WAIT_MS;
    const held = async () =>
      (await run<{ held: boolean }>("select pg_try_advisory_lock($1) as held", [INDEX_BUILD_LOCK]))[0]!.held;
    while (!(await held())) {
      if (Date.now() >= deadline) {
        throw new Error(
          `another migrator has held the index build lock (${INDEX_BUILD_LOCK}) for ${OTHER_BUILDS_WAIT_MS / 1000} s; ` +
            "see pg_stat_progress_create_index for the build under way",
        );
      }
      await new Promise((resolve) => setTimeout(resolve, OTHER_BUILDS_LOOK_MS));
    }
    try {
      for (const index of indexes) {
        const [state] = await run<{ valid: boolean }>(
          `select i.indisvalid as valid from pg_class c join pg_index i on i.indexrelid = c.oid
           where c.relname = $1 and c.relnamespace = 'public'::regnamespace`,
          [index.name],
        );
        if (state?.valid) continue;
        if (state) await run(`DROP INDEX CONCURRENTLY IF EXISTS "${index.name}"`);
        await run(index.concurrent);
      }
    } finally {
      await run("select pg_advisory_unlock($1)", [INDEX_BUILD_LOCK]);
    }
    clean = true;
  } finally {
    // A connection that failed may still hold the lock: closed, not pooled again.
    client.release(!clean);
  }
}

/**
 * Throws when the database's first migration came before this code's first
 * (`baseline`): a database made by a release from before the migrations were
 * squashed into one baseline, which cannot be migrated in place.
 */
export function refuseOlderHistory(firstApplied: number | null, baseline: number | undefined): void {
  if (firstApplied === null || baseline === undefined || firstApplied >= baseline) return;
  throw new Error(
    "this database was made by a release whose migrations came before the baseline they were squashed into; " +
      "it cannot be migrated in place: start from an empty database (the embedded one: delete its folder, " +
      ".hooklane/ by default)",
  );
}

/**
 * Checks, in one statement and without a lock, that the newest migration
 * this code ships is applied (a newer schema is fine: migrations only add).
 * Throws SchemaBehindError naming what the database has, what is needed and
 * the command to run.
 */
export async function verifySchema(database: Database): Promise<void> {
  // An entry's `when` is what drizzle stores as the migration's `created_at`.
  const entries = journal.entries;
  const needed = entries.at(-1)!;
  let applied: number | null;
  try {
    const [row] = await database.rows<{ applied: string | number | null }>(
      sql`select max(created_at) as applied from drizzle.__drizzle_migrations`,
    );
    applied = row?.applied == null ? null : Number(row.applied);
  } catch (error) {
    // 42P01 undefined table, 3F000 undefined schema: never migrated.
    if (errorFacts(error).code !== "42P01" && errorFacts(error).code !== "3F000") throw error;
    applied = null;
  }
  if (applied !== null && applied >= needed.when) return;
  const appliedTag = applied === null ? null : (entries.find((e) => e.when === applied)?.tag ?? "an unknown migration");
  throw new SchemaBehindError(appliedTag, needed.tag);
}
