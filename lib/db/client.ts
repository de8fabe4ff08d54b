import { mkdirSync } from "node:fs";
import type { PGlite } from "@electric-sql/pglite";
import type { SQL } from "drizzle-orm";
import { drizzle as drizzlePg } from "drizzle-orm/node-postgres";
import type { PgDatabase, PgQueryResultHKT } from "drizzle-orm/pg-core";
import pg from "pg";
import { silentLogger, type Logger } from "../log/logger.ts";
import { createSharedListener, type ListenerHealth } from "./database-listener.ts";
import { createOutageTracker, type OutageTracker } from "./database-outage.ts";
import { applyMigrations, MIGRATIONS_FOLDER, verifySchema } from "./migrations.ts";
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
  /**
   * A server database's schema on open: `apply` pending migrations (the
   * default; self-hosted processes and `npm run db:migrate`), or only
   * `verify` that it is current (Vercel functions, where migrating is a
   * deploy step), or leave it `as-is` (a tool that migrates by itself).
   * The embedded database always applies them.
   */
  schema?: "apply" | "verify" | "as-is";
  /** The pool lives in a Vercel function: attached with `attachDatabasePool`, so idle clients are closed before the instance suspends. */
  vercelFunction?: boolean;
}

/**
 * Opens the database — node-postgres or Neon's serverless driver for a URL,
 * embedded PGlite otherwise — and applies pending migrations (or verifies
 * the schema, per `schema`) before returning. Throws SchemaBehindError when
 * verifying finds it behind; nothing is left open when it throws. PGlite
 * (and its WebAssembly), Neon's driver and Vercel's helpers are imported
 * only by the process that uses them: a lane worker on node-postgres never
 * loads them.
 */
export async function openDatabase(options: DatabaseOptions): Promise<Database> {
  if (!options.databaseUrl) return openPglite(options);
  const settings = {
    connectionString: options.databaseUrl,
    max: options.poolMax ?? 10,
    application_name: options.applicationName ?? "hooklane",
  };
  if (options.driver === "neon") {
    const [neon, { drizzle: drizzleNeon }] = await Promise.all([
      import("@neondatabase/serverless"),
      import("drizzle-orm/neon-serverless"),
    ]);
    const pool = new neon.Pool(settings);
    return openPooled("neon", pool as unknown as pg.Pool, options, {
      drizzle: (logger) => drizzleNeon(pool, { schema, logger }) as unknown as Db,
      listener: () => new neon.Client(listenerSettings(settings)) as unknown as pg.Client,
    });
  }
  const pool = new pg.Pool(settings);
  return openPooled("postgres", pool, options, {
    drizzle: (logger) => drizzlePg(pool, { schema, logger }) as unknown as Db,
    listener: () => new pg.Client(listenerSettings(settings)),
  });
}

/** The LISTEN session names itself `<application name>-listen`, so operators can find it in pg_stat_activity. */
function listenerSettings(settings: { connectionString: string; application_name: string }) {
  return { connectionString: settings.connectionString, application_name: `${settings.application_name}-listen` };
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
  options: DatabaseOptions,
  driver: {
    drizzle(logger: QueryCounter): Db;
    listener(): pg.Client;
  },
): Promise<Database> {
  const log = (options.logger ?? silentLogger).child({ component: "db" });
  const outage = createOutageTracker({ logger: log, probe: () => pool.query("select 1") });
  pool.on("error", (error) => {
    if (!outage.report(error)) log.warn({ err: error }, "idle database client failed");
  });
  // A client checked out of the pool (a transaction, between two statements) whose connection dies
  // emits "error" with no listener of the pool's, which would crash the process. Its caller hears of
  // it through the statement that was running or the next one, and the pool drops it on release.
  pool.on("connect", (client) => client.on("error", (error) => void outage.report(error)));
  if (options.vercelFunction) {
    const { attachDatabasePool } = await import("@vercel/functions/db-connections");
    attachDatabasePool(pool);
  }
  const counter = queryCounter();
  const listener = createSharedListener({ connect: driver.listener, logger: log, outage });
  const database = facade(kind, driver.drizzle(counter), {
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
  try {
    if (options.schema === "verify") await verifySchema(database);
    else if (options.schema !== "as-is") await applyMigrations(database);
  } catch (error) {
    await database.close();
    throw error;
  }
  return database;
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
  const [{ drizzle: drizzlePglite }, { migrate: migratePglite }] = await Promise.all([
    import("drizzle-orm/pglite"),
    import("drizzle-orm/pglite/migrator"),
  ]);
  const client = options.pglite ?? (await (await import("@electric-sql/pglite")).PGlite.create(dataDir));
  await migratePglite(drizzlePglite(client), { migrationsFolder: MIGRATIONS_FOLDER });
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
