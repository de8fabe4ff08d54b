import { mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { PGlite } from "@electric-sql/pglite";
import * as neon from "@neondatabase/serverless";
import type { SQL } from "drizzle-orm";
import { drizzle as drizzleNeon } from "drizzle-orm/neon-serverless";
import { migrate as migrateNeon } from "drizzle-orm/neon-serverless/migrator";
import { drizzle as drizzlePg } from "drizzle-orm/node-postgres";
import { migrate as migratePg } from "drizzle-orm/node-postgres/migrator";
import type { PgDatabase, PgQueryResultHKT } from "drizzle-orm/pg-core";
import { drizzle as drizzlePglite } from "drizzle-orm/pglite";
import { migrate as migratePglite } from "drizzle-orm/pglite/migrator";
import pg from "pg";
import * as schema from "./schema.ts";

export type Db = PgDatabase<PgQueryResultHKT, typeof schema>;

export interface Database {
  db: Db;
  kind: "pglite" | "postgres" | "neon";
  /** Runs a raw statement and returns its rows. */
  rows<T>(query: SQL): Promise<T[]>;
  /** Subscribes to a NOTIFY channel; returns the unsubscribe function. */
  listen(channel: string, onNotify: (payload: string) => void): Promise<() => Promise<void>>;
  /** Counts every statement sent, so tests can prove that none was. */
  readonly queryCount: number;
  close(): Promise<void>;
}

export interface DatabaseOptions {
  databaseUrl?: string;
  /** `neon`: Neon's serverless driver (WebSockets); `pg`: node-postgres. */
  driver?: "pg" | "neon";
  /** Folder for the embedded database, or `memory://` for a throwaway one. */
  pgliteDataDir?: string;
  /** An embedded database already opened (tests clone a migrated template). */
  pglite?: PGlite;
  poolMax?: number;
  applicationName?: string;
}

const MIGRATIONS = fileURLToPath(new URL("../../drizzle", import.meta.url));
// Any constant will do; it serialises concurrent migrators (API + N workers starting together).
const MIGRATION_LOCK = 7_207_311;

/**
 * Opens the database — node-postgres or Neon's serverless driver for a URL,
 * embedded PGlite otherwise — and applies pending migrations before returning.
 */
export async function openDatabase(options: DatabaseOptions): Promise<Database> {
  if (!options.databaseUrl) return openPglite(options);
  const settings = {
    connectionString: options.databaseUrl,
    max: options.poolMax ?? 10,
    application_name: options.applicationName ?? "hooklane",
  };
  if (options.driver === "neon") {
    const pool = new neon.Pool(settings);
    return openPooled("neon", pool as unknown as pg.Pool, {
      migrate: (client) =>
        migrateNeon(drizzleNeon(client as unknown as neon.PoolClient), { migrationsFolder: MIGRATIONS }),
      drizzle: (logger) => drizzleNeon(pool, { schema, logger }) as unknown as Db,
      listener: () => new neon.Client(settings.connectionString) as unknown as pg.Client,
    });
  }
  const pool = new pg.Pool(settings);
  return openPooled("postgres", pool, {
    migrate: (client) => migratePg(drizzlePg(client), { migrationsFolder: MIGRATIONS }),
    drizzle: (logger) => drizzlePg(pool, { schema, logger }) as unknown as Db,
    listener: () => new pg.Client({ connectionString: settings.connectionString }),
  });
}

interface QueryCounter {
  logQuery(): void;
  readonly count: number;
}

function queryCounter(): QueryCounter {
  let count = 0;
  return {
    logQuery: () => void count++,
    get count() {
      return count;
    },
  };
}

/** node-postgres and Neon share pg's Pool/Client surface; only construction differs. */
async function openPooled(
  kind: "postgres" | "neon",
  pool: pg.Pool,
  driver: {
    migrate(client: pg.PoolClient): Promise<void>;
    drizzle(logger: QueryCounter): Db;
    listener(): pg.Client;
  },
): Promise<Database> {
  pool.on("error", (error) => console.error("[db] idle client error", error));
  const lockClient = await pool.connect();
  try {
    await lockClient.query("select pg_advisory_lock($1)", [MIGRATION_LOCK]);
    await driver.migrate(lockClient);
  } finally {
    await lockClient.query("select pg_advisory_unlock($1)", [MIGRATION_LOCK]).catch(() => {});
    lockClient.release();
  }
  const counter = queryCounter();
  const db = driver.drizzle(counter);
  const listeners = new Set<pg.Client>();
  return {
    db,
    kind,
    rows: async <T>(query: SQL) => ((await db.execute(query)) as unknown as { rows: T[] }).rows,
    async listen(channel, onNotify) {
      const client = driver.listener();
      client.on("error", (error) => console.error(`[db] listener on ${channel} failed`, error));
      await client.connect();
      client.on("notification", (message) => {
        if (message.channel === channel) onNotify(message.payload ?? "");
      });
      await client.query(`listen "${channel}"`);
      listeners.add(client);
      return async () => {
        listeners.delete(client);
        await client.end().catch(() => {});
      };
    },
    get queryCount() {
      return counter.count;
    },
    async close() {
      await Promise.all([...listeners].map((client) => client.end().catch(() => {})));
      await pool.end();
    },
  };
}

async function openPglite(options: DatabaseOptions): Promise<Database> {
  const dataDir = options.pgliteDataDir ?? "memory://";
  if (!options.pglite && !dataDir.includes("://")) mkdirSync(dataDir, { recursive: true });
  const client = options.pglite ?? (await PGlite.create(dataDir));
  await migratePglite(drizzlePglite(client), { migrationsFolder: MIGRATIONS });
  const counter = queryCounter();
  const db = drizzlePglite(client, { schema, logger: counter }) as unknown as Db;
  return {
    db,
    kind: "pglite",
    rows: async <T>(query: SQL) => ((await db.execute(query)) as unknown as { rows: T[] }).rows,
    listen: (channel, onNotify) => client.listen(channel, onNotify),
    get queryCount() {
      return counter.count;
    },
    close: () => client.close(),
  };
}
