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
import { silentLogger, type Logger } from "../log/logger.ts";
import { createSharedListener, type ListenerHealth } from "./database-listener.ts";
import { createOutageTracker, type OutageTracker } from "./database-outage.ts";
import * as schema from "./schema.ts";

export type Db = PgDatabase<PgQueryResultHKT, typeof schema>;

export interface Database {
  db: Db;
  kind: "pglite" | "postgres" | "neon";
  /** Runs a raw statement and returns its rows. */
  rows<T>(query: SQL): Promise<T[]>;
  /**
   * Runs `fn` in one transaction, handing it a Database whose statements all
   * belong to it: committed when `fn` resolves, rolled back when it throws.
   * Inside a transaction this nests as a savepoint.
   */
  transaction<T>(fn: (tx: Database) => Promise<T>): Promise<T>;
  /**
   * Subscribes to a NOTIFY channel; returns the unsubscribe function. The
   * session heals itself after a lost connection and then calls `onNotify`
   * once with "" so the subscriber catches up.
   */
  listen(channel: string, onNotify: (payload: string) => void): Promise<() => Promise<void>>;
  /** The LISTEN session's state (always up on the embedded database). */
  readonly listenerHealth: ListenerHealth;
  /** Outage bookkeeping: connection failures are logged here, once per outage. */
  readonly outage: OutageTracker;
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
  /** Where outages, lost LISTEN sessions and idle-client errors are told; nowhere when absent. */
  logger?: Logger;
}

/** The committed migrations, applied by `openDatabase`. */
export const MIGRATIONS = fileURLToPath(new URL("../../drizzle", import.meta.url));
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
    return openPooled("neon", pool as unknown as pg.Pool, options.logger ?? silentLogger, {
      migrate: (client) =>
        migrateNeon(drizzleNeon(client as unknown as neon.PoolClient), { migrationsFolder: MIGRATIONS }),
      drizzle: (logger) => drizzleNeon(pool, { schema, logger }) as unknown as Db,
      listener: () => new neon.Client(settings.connectionString) as unknown as pg.Client,
    });
  }
  const pool = new pg.Pool(settings);
  return openPooled("postgres", pool, options.logger ?? silentLogger, {
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
  logger: Logger,
  driver: {
    migrate(client: pg.PoolClient): Promise<void>;
    drizzle(logger: QueryCounter): Db;
    listener(): pg.Client;
  },
): Promise<Database> {
  const log = logger.child({ component: "db" });
  const outage = createOutageTracker({ logger: log, probe: () => pool.query("select 1") });
  pool.on("error", (error) => {
    if (!outage.report(error)) log.warn({ err: error }, "idle database client failed");
  });
  const lockClient = await pool.connect();
  try {
    await lockClient.query("select pg_advisory_lock($1)", [MIGRATION_LOCK]);
    await driver.migrate(lockClient);
  } finally {
    await lockClient.query("select pg_advisory_unlock($1)", [MIGRATION_LOCK]).catch(() => {});
    lockClient.release();
  }
  const counter = queryCounter();
  const listener = createSharedListener({ connect: driver.listener, logger: log });
  return facade(kind, driver.drizzle(counter), {
    listen: listener.listen,
    listenerHealth: () => listener.health,
    outage,
    counter,
    async close() {
      outage.close();
      await listener.close();
      await pool.end();
    },
  });
}

/** The Database over a drizzle instance (or a transaction of one). */
function facade(
  kind: Database["kind"],
  db: Db,
  parts: {
    listen: Database["listen"];
    listenerHealth: () => ListenerHealth;
    outage: OutageTracker;
    counter: QueryCounter;
    close(): Promise<void>;
  },
): Database {
  return {
    db,
    kind,
    rows: async <T>(query: SQL) => ((await db.execute(query)) as unknown as { rows: T[] }).rows,
    transaction: (fn) => db.transaction((tx) => fn(facade(kind, tx as unknown as Db, parts))),
    listen: parts.listen,
    get listenerHealth() {
      return parts.listenerHealth();
    },
    outage: parts.outage,
    get queryCount() {
      return parts.counter.count;
    },
    close: parts.close,
  };
}

async function openPglite(options: DatabaseOptions): Promise<Database> {
  const dataDir = options.pgliteDataDir ?? "memory://";
  if (!options.pglite && !dataDir.includes("://")) mkdirSync(dataDir, { recursive: true });
  const client = options.pglite ?? (await PGlite.create(dataDir));
  await migratePglite(drizzlePglite(client), { migrationsFolder: MIGRATIONS });
  const counter = queryCounter();
  const db = drizzlePglite(client, { schema, logger: counter }) as unknown as Db;
  const channels = new Set<string>();
  return facade("pglite", db, {
    async listen(channel, onNotify) {
      channels.add(channel);
      return client.listen(channel, onNotify);
    },
    // In-process: nothing to lose.
    listenerHealth: () => ({ up: true, channels: [...channels], downSince: undefined, reconnects: 0 }),
    outage: createOutageTracker({
      logger: (options.logger ?? silentLogger).child({ component: "db" }),
      probe: () => client.query("select 1"),
    }),
    counter,
    close: () => client.close(),
  });
}
