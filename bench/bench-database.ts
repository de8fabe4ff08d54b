import { randomBytes } from "node:crypto";
import { sql } from "drizzle-orm";
import pg from "pg";
import { openDatabase, type Database } from "../lib/db/client.ts";
import { account, webhook } from "../lib/db/schema.ts";
import { autoSyncCatalogue } from "../lib/webhook/catalogue/catalogue-auto-sync.ts";
import { createSecretSealer } from "../lib/webhook/outbound/webhook-secret-seal.ts";
import { generateWebhookSecret } from "../lib/webhook/outbound/webhook-signature.ts";
import { DELIVER_WAKE_CHANNEL } from "../lib/webhook/transport/postgres/postgres-transport.ts";
import { median } from "./stats.ts";
import { BENCH_ACCOUNT, BENCH_EVENT_TYPE, benchEventBody } from "./bench-event-body.ts";

export interface BenchDatabase {
  /** The throwaway database's URL, for the product's processes and the peers. */
  url: string;
  database: Database;
  /** Empties every table the scenarios write (no product process may be running). */
  reset(): Promise<void>;
  /**
   * Creates `count` webhooks for the benchmark event, secrets sealed as the API seals them, each owned by
   * `account` (the benchmark's own by default) or global; returns their ids.
   */
  seedWebhooks(count: number, url: string, scope: "account" | "global", account?: string): Promise<string[]>;
  /**
   * Inserts `count` pending dispatches in one transaction and wakes the lane: all for `webhooks`, or
   * taking turns over them (the n-th row for `webhooks[n % length]`) when it lists several.
   */
  insertDispatches(webhooks: string | readonly string[], count: number, tag: string): Promise<void>;
  /** Dispatches delivered successfully so far (successful attempts recorded). */
  delivered(): Promise<number>;
  /** Transactions committed in this database so far (pg_stat_database; a backend's own count lands when it exits or idles). */
  transactions(): Promise<number>;
  /** The median time of a one-row autocommit INSERT: what every durable commit costs on this disk. */
  commitLatencyMs(): Promise<number>;
  /** Closes the connection and drops the database. */
  drop(): Promise<void>;
}

const INSERT_CHUNK = 10_000;

/**
 * Creates a throwaway database on the server at `adminUrl`, migrates it, syncs
 * the catalogue into it and creates the benchmark account. With
 * `asyncCommit`, sessions on this database (only) do not wait for the WAL
 * flush. Throws when the server cannot be reached.
 */
export async function createBenchDatabase(
  adminUrl: string,
  secretKey: string,
  options: { asyncCommit: boolean },
): Promise<BenchDatabase> {
  const name = `hooklane_bench_${randomBytes(5).toString("hex")}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`create database ${name}`);
  if (options.asyncCommit) await admin.query(`alter database ${name} set synchronous_commit = off`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const database = await openDatabase({ databaseUrl: url.toString(), applicationName: "hooklane-bench" });
  await autoSyncCatalogue(database);
  await database.db.insert(account).values({ id: BENCH_ACCOUNT, name: "Benchmark" });
  const sealer = createSecretSealer(secretKey);

  return {
    url: url.toString(),
    database,
    async reset() {
      await database.rows(sql`
        truncate webhook_attempt, webhook_dispatch, webhook_dispatch_open, webhook_route_job, webhook_notification,
          webhook_poison_message, webhook_lane_minute, webhook_lane_in_flight, webhook, payment_debt cascade
      `);
    },
    async seedWebhooks(count, target, scope, owner = BENCH_ACCOUNT) {
      const ids: string[] = [];
      for (let start = 0; start < count; start += 1_000) {
        const rows = await Promise.all(
          Array.from({ length: Math.min(1_000, count - start) }, async () => ({
            account: scope === "global" ? null : owner,
            url: target,
            events: [BENCH_EVENT_TYPE],
            secretSealed: await sealer.seal(generateWebhookSecret()),
            createdBy: "bench",
          })),
        );
        const created = await database.db.insert(webhook).values(rows).returning({ id: webhook.id });
        ids.push(...created.map((row) => row.id));
      }
      return ids;
    },
    async insertDispatches(webhooks, count, tag) {
      const ids = typeof webhooks === "string" ? [webhooks] : webhooks;
      await database.db.transaction(async (tx) => {
        for (let start = 0; start < count; start += INSERT_CHUNK) {
          const rows = Array.from({ length: Math.min(INSERT_CHUNK, count - start) }, (_, i) => {
            const n = start + i;
            return {
              e: `evt_${tag}_${n}`,
              w: ids[n % ids.length],
              p: benchEventBody(`evt_${tag}_${n}`, `${tag}_${n}`),
            };
          });
          // Each with its open row, as routing writes them.
          await tx.execute(sql`
            with made as (
              insert into webhook_dispatch (event_id, event_type, webhook_id, account, payload)
              select r.e, ${BENCH_EVENT_TYPE}, r.w, ${BENCH_ACCOUNT}, r.p
              from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) as r(e text, w text, p text)
              returning id, webhook_id, next_attempt_at
            )
            insert into webhook_dispatch_open (dispatch_id, webhook_id, next_attempt_at)
            select id, webhook_id, next_attempt_at from made
          `);
        }
      });
      await database.rows(sql`select pg_notify(${DELIVER_WAKE_CHANNEL}, '')`);
    },
    async delivered() {
      // From the lane's own per-minute rollup, a few rows, rather than a count over the ledger, which no index on
      // status answers and whose scan, polled, would cost PostgreSQL more than the lane it measures. Successful
      // attempts: the same as dispatches delivered where nothing is attempted twice, as here.
      const [row] = await database.rows<{ n: number }>(
        sql`select coalesce(sum(succeeded), 0)::int as n from webhook_lane_minute`,
      );
      return row?.n ?? 0;
    },
    async transactions() {
      const [row] = await database.rows<{ n: string | number }>(
        sql`select xact_commit as n from pg_stat_database where datname = current_database()`,
      );
      return Number(row?.n ?? NaN);
    },
    async commitLatencyMs() {
      await database.rows(sql`create table bench_commit_probe (id serial primary key, at timestamptz default now())`);
      const times: number[] = [];
      for (let i = 0; i < 50; i++) {
        const started = performance.now();
        await database.rows(sql`insert into bench_commit_probe default values`);
        times.push(performance.now() - started);
      }
      await database.rows(sql`drop table bench_commit_probe`);
      return median(times);
    },
    async drop() {
      await database.close();
      await admin.query(`drop database if exists ${name} with (force)`);
      await admin.end();
    },
  };
}
