import { mkdirSync } from "node:fs";
import type { PGlite } from "@electric-sql/pglite";
import { is, SQL, sql, type Query } from "drizzle-orm";
import { drizzle as drizzlePg } from "drizzle-orm/node-postgres";
import type { PgDatabase, PgQueryResultHKT } from "drizzle-orm/pg-core";
import pg from "pg";
import { silentLogger, type Logger } from "../log/logger.ts";
import { createSharedListener, type ListenerHealth } from "./database-listener.ts";
import { createOutageTracker, type OutageTracker } from "./database-outage.ts";
import { lockDataDir } from "./data-dir-lock.ts";
import { applyMigrations, refuseOlderHistory, verifySchema } from "./migrations.ts";
// Imported, not read from disk: a function bundle is traced from its imports, and always carries it.
import journal from "../../drizzle/meta/_journal.json" with { type: "json" };
import { NotifyCoalescer, TransactionLink, type PipelinedLink } from "./pipelined-transaction.ts";
import * as schema from "./schema.ts";

export type Db = PgDatabase<PgQueryResultHKT, typeof schema>;

export interface Database {
  db: Db;
  kind: "pglite" | "postgres" | "neon";
  /**
   * Runs a raw statement and returns its rows. With `name`, on node-postgres it
   * is a named prepared statement: each connection parses it once
   * and the server may keep one plan for it. The text must then be the same
   * on every call with that name (values go in as parameters).
   */
  rows<T>(query: SQL, name?: string): Promise<T[]>;
  /**
   * Runs `fn` in one transaction, handing it a Database whose statements all
   * belong to it: committed when `fn` resolves, rolled back when it throws.
   * Inside a transaction this nests as a savepoint.
   */
  transaction<T>(fn: (tx: Database) => Promise<T>): Promise<T>;
  /**
   * Inside a transaction: runs `query` as its last statement. On node-postgres
   * it goes to the server in the same write as COMMIT, without a round trip of
   * its own, and its failure rolls the transaction back and rejects
   * `transaction()`; elsewhere it runs at once. With a `name` it is a named
   * statement, parsed and planned once per connection on node-postgres (a
   * name always stands for the same SQL). `query` may come compiled already
   * (text and values), for a hot statement built once rather than per call.
   */
  beforeCommit(query: SQL | Query, name?: string): Promise<void>;
  /**
   * Inside a transaction, before its last `statements` statements: on
   * node-postgres, COMMIT (with the `beforeCommit` statements and the NOTIFY)
   * leaves in their write, right behind them, so the transaction costs one
   * write and one round trip. They must be issued together (in one run of
   * microtasks, as `Promise.all` does) and nothing may run after them;
   * otherwise COMMIT simply goes at the end. Elsewhere it does nothing.
   */
  commitAfter(statements: number): void;
  /**
   * Whether transactions here are pipelined (node-postgres): inside one,
   * `beforeCommit` statements wait for COMMIT and `commitAfter` sends it
   * early. Elsewhere `beforeCommit` runs its statement at once.
   */
  readonly pipelined: boolean;
  /**
   * Inside a transaction: wakes LISTENers on `channel` once it commits. On
   * node-postgres concurrent transactions share their NOTIFYs (at most one on
   * its way per channel, see NotifyCoalescer): every commit is followed by a
   * NOTIFY, not every commit carries one. Elsewhere it is a NOTIFY in the
   * transaction, delivered at commit.
   */
  notifyAtCommit(channel: string): Promise<void>;
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
    pipelined: (link, logger) =>
      drizzlePg({ client: link as unknown as pg.PoolClient, schema, logger }) as unknown as Db,
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
    /** A drizzle instance over one pooled connection's link (node-postgres): transactions are pipelined. */
    pipelined?(link: PipelinedLink, logger: QueryCounter): Db;
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
  const parts = {
    listen: listener.listen,
    listenerHealth: () => listener.health,
    outage,
    counter,
    async close() {
      outage.close();
      await listener.close();
      await pool.end();
    },
  };
  const database = facade(kind, driver.drizzle(counter), {
    ...parts,
    ...(driver.pipelined
      ? { transaction: pipelinedTransactions(pool, driver.pipelined, counter, kind, parts), pipelined: true }
      : {}),
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

interface FacadeParts {
  listen: Database["listen"];
  listenerHealth: () => ListenerHealth;
  outage: OutageTracker;
  counter: QueryCounter;
  close(): Promise<void>;
  /** Replaces drizzle's transactions (pipelined ones, or savepoints inside one). */
  transaction?: Database["transaction"];
  beforeCommit?: Database["beforeCommit"];
  commitAfter?: Database["commitAfter"];
  notifyAtCommit?: Database["notifyAtCommit"];
  /** Transactions are pipelined (`Database.pipelined`). */
  pipelined?: boolean;
}

/** What a named statement needs of a drizzle instance: its session (public in drizzle, marked internal) and dialect. */
interface NamedQueryParts {
  session: {
    prepareQuery(
      query: Query,
      fields: undefined,
      name: string | undefined,
      arrayMode: false,
    ): { execute(): Promise<unknown> };
  };
  dialect: { sqlToQuery(query: SQL): Query };
}

/** The Database over a drizzle instance (or a transaction of one). */
function facade(kind: Database["kind"], db: Db, parts: FacadeParts): Database {
  const { session, dialect } = db as unknown as NamedQueryParts;
  const rows = async <T>(query: SQL, name?: string): Promise<T[]> => {
    if (name === undefined || kind !== "postgres") return ((await db.execute(query)) as unknown as { rows: T[] }).rows;
    return ((await session.prepareQuery(dialect.sqlToQuery(query), undefined, name, false).execute()) as { rows: T[] })
      .rows;
  };
  /** A statement given as SQL or compiled already; named only on node-postgres, as with `rows`. */
  const run = async (query: SQL | Query, name?: string): Promise<void> => {
    if (is(query, SQL)) return void (await rows(query, name));
    await session.prepareQuery(query, undefined, kind === "postgres" ? name : undefined, false).execute();
  };
  const { transaction: _t, beforeCommit: _b, commitAfter: _c, notifyAtCommit: _n, pipelined: _p, ...shared } = parts;
  return {
    db,
    kind,
    rows,
    transaction: parts.transaction ?? ((fn) => db.transaction((tx) => fn(facade(kind, tx as unknown as Db, shared)))),
    beforeCommit: parts.beforeCommit ?? (async (query, name) => void (await run(query, name))),
    commitAfter: parts.commitAfter ?? (() => {}),
    pipelined: parts.pipelined ?? false,
    notifyAtCommit:
      parts.notifyAtCommit ?? (async (channel) => void (await rows(sql`select pg_notify(${channel}, '')`))),
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
  const onDisk = !options.pglite && !dataDir.includes("://");
  if (onDisk) mkdirSync(dataDir, { recursive: true });
  // One process's database: a second one on the same folder is refused before it opens it.
  const unlock = onDisk ? lockDataDir(dataDir) : () => {};
  let client: PGlite;
  try {
    client = options.pglite ?? (await (await import("@electric-sql/pglite")).PGlite.create(dataDir));
  } catch (error) {
    unlock();
    throw error;
  }
  const { drizzle: drizzlePglite } = await import("drizzle-orm/pglite");
  const applied = await client
    .query<{ first: string | null }>("select min(created_at)::text as first from drizzle.__drizzle_migrations")
    .catch(() => undefined);
  const first = applied?.rows[0]?.first;
  refuseOlderHistory(first == null ? null : Number(first), journal.entries[0]?.when);
  const counter = queryCounter();
  const db = drizzlePglite(client, { schema, logger: counter }) as unknown as Db;
  const channels = new Set<string>();
  const database = facade("pglite", db, {
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
    close: async () => {
      await client.close();
      unlock();
    },
  });
  // One process, nothing writing beside the migrator: an index meant to be built concurrently is built in place.
  await applyMigrations(database, undefined, { concurrently: false });
  return database;
}

/**
 * Transactions on node-postgres, pipelined (see `pipelined-transaction.ts`):
 * each pooled connection keeps one drizzle instance over its link, so a
 * transaction builds nothing per request. Inside one, a nested transaction is
 * a savepoint, as with drizzle's.
 */
function pipelinedTransactions(
  pool: pg.Pool,
  pipelined: (link: PipelinedLink, logger: QueryCounter) => Db,
  counter: QueryCounter,
  kind: Database["kind"],
  parts: FacadeParts,
): Database["transaction"] {
  const connections = new WeakMap<pg.PoolClient, { link: TransactionLink; tx: Database }>();
  const notifiers = new Map<string, NotifyCoalescer>();
  const notifier = (channel: string) => {
    let coalescer = notifiers.get(channel);
    if (!coalescer) {
      const send = () => {
        counter.logQuery();
        return pool.query("select pg_notify($1, '')", [channel]);
      };
      notifiers.set(channel, (coalescer = new NotifyCoalescer(send)));
    }
    return coalescer;
  };
  const connectionOf = (client: pg.PoolClient) => {
    let connection = connections.get(client);
    if (!connection) {
      const link = new TransactionLink(client, () => counter.logQuery(), notifier);
      const db = pipelined(link, counter);
      let depth = 0;
      const tx: Database = facade(kind, db, {
        ...parts,
        async transaction(fn) {
          const name = `sp${++depth}`;
          try {
            await db.execute(sql.raw(`savepoint ${name}`));
            try {
              const result = await fn(tx);
              await db.execute(sql.raw(`release savepoint ${name}`));
              return result;
            } catch (error) {
              await db.execute(sql.raw(`rollback to savepoint ${name}`));
              throw error;
            }
          } finally {
            depth--;
          }
        },
        async beforeCommit(query, name) {
          link.beforeCommit(query, name);
        },
        commitAfter(statements) {
          link.commitAfter(statements);
        },
        pipelined: true,
        async notifyAtCommit(channel) {
          link.notifyAtCommit(channel);
        },
      });
      connections.set(client, (connection = { link, tx }));
    }
    return connection;
  };
  return async (fn) => {
    const client = await pool.connect();
    const { link, tx } = connectionOf(client);
    // A connection whose transaction could not be ended is not given back to the pool as if it were clean.
    let broken: Error | undefined;
    link.open();
    try {
      const result = await fn(tx);
      await link.commit();
      return result;
    } catch (error) {
      await link.rollback().catch((rollbackFailed: unknown) => {
        broken = rollbackFailed instanceof Error ? rollbackFailed : new Error(String(rollbackFailed));
      });
      throw error;
    } finally {
      link.close();
      client.release(broken);
    }
  };
}
