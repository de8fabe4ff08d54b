import { mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { PGlite } from "@electric-sql/pglite";
import type { SQL } from "drizzle-orm";
import { drizzle as drizzlePglite } from "drizzle-orm/pglite";
import { migrate as migratePglite } from "drizzle-orm/pglite/migrator";
import { drizzle as drizzlePg } from "drizzle-orm/node-postgres";
import { migrate as migratePg } from "drizzle-orm/node-postgres/migrator";
import type { PgDatabase, PgQueryResultHKT } from "drizzle-orm/pg-core";
import pg from "pg";
import * as schema from "./schema.ts";

export type Db = PgDatabase<PgQueryResultHKT, typeof schema>;

export interface Database {
  db: Db;
  kind: "pglite" | "postgres";
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
 * Opens the database: node-postgres for a `postgres://` URL, embedded PGlite
 * otherwise. Applies pending migrations before returning.
 */
export async function openDatabase(options: DatabaseOptions): Promise<Database> {
  let queryCount = 0;
  const logger = { logQuery: () => void queryCount++ };

  if (options.databaseUrl) {
    const pool = new pg.Pool({
      connectionString: options.databaseUrl,
      max: options.poolMax ?? 10,
      application_name: options.applicationName ?? "hooklane",
    });
    pool.on("error", (error) => console.error("[db] idle client error", error));
    const lockClient = await pool.connect();
    try {
      await lockClient.query("select pg_advisory_lock($1)", [MIGRATION_LOCK]);
      await migratePg(drizzlePg(lockClient), { migrationsFolder: MIGRATIONS });
    } finally {
      await lockClient.query("select pg_advisory_unlock($1)", [MIGRATION_LOCK]).catch(() => {});
      lockClient.release();
    }
    const db = drizzlePg(pool, { schema, logger }) as unknown as Db;
    const listeners: pg.Client[] = [];
    return {
      db,
      kind: "postgres",
      rows: async <T>(query: SQL) => ((await db.execute(query)) as unknown as { rows: T[] }).rows,
      async listen(channel, onNotify) {
        const client = new pg.Client({ connectionString: options.databaseUrl });
        client.on("error", (error) => console.error(`[db] listener on ${channel} failed`, error));
        await client.connect();
        client.on("notification", (message) => {
          if (message.channel === channel) onNotify(message.payload ?? "");
        });
        await client.query(`listen "${channel}"`);
        listeners.push(client);
        return async () => {
          listeners.splice(listeners.indexOf(client), 1);
          await client.end().catch(() => {});
        };
      },
      get queryCount() {
        return queryCount;
      },
      async close() {
        await Promise.all(listeners.map((client) => client.end().catch(() => {})));
        await pool.end();
      },
    };
  }

  const dataDir = options.pgliteDataDir ?? "memory://";
  if (!options.pglite && !dataDir.includes("://")) mkdirSync(dataDir, { recursive: true });
  const client = options.pglite ?? (await PGlite.create(dataDir));
  await migratePglite(drizzlePglite(client), { migrationsFolder: MIGRATIONS });
  const db = drizzlePglite(client, { schema, logger }) as unknown as Db;
  return {
    db,
    kind: "pglite",
    rows: async <T>(query: SQL) => ((await db.execute(query)) as unknown as { rows: T[] }).rows,
    async listen(channel, onNotify) {
      return client.listen(channel, onNotify);
    },
    get queryCount() {
      return queryCount;
    },
    close: () => client.close(),
  };
}
