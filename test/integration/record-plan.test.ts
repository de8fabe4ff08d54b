import { sql } from "drizzle-orm";
import { afterAll, beforeAll, expect, it } from "vitest";
import { openDatabase, type Database } from "../../lib/db/client.ts";
import { recordAttempts, type AttemptRecord, type BreakerRule } from "../../lib/db/sql/record-attempts.ts";
import { succeededAttempt } from "../support/attempt-records.ts";
import { createTestDatabase } from "../support/postgres.ts";

// The record statement keeps one plan per connection. Made while the ledger was small, that plan used to join each
// batch to webhook_dispatch through a scan of the whole table, and kept doing so as the table grew
// (hooklane_record_attempts, lib/db/functions/).

const WORKER = "record-plan";
const BREAKER: BreakerRule = { threshold: 5, openBaseMs: 1_000, openMaxMs: 60_000, connectionClasses: ["timeout"] };

let database: Database;
let drop: () => Promise<void>;

beforeAll(async () => {
  const created = await createTestDatabase();
  drop = created.drop;
  // One connection: the plan the statement keeps is this connection's.
  database = await openDatabase({ databaseUrl: created.url, poolMax: 1 });
  await database.rows(sql`
    insert into webhook (id, url, events, secret_sealed, created_by)
    values ('wh_plan', 'https://example.com/hook', array['*'], 'sealed', 'test')
  `);
}, 60_000);

afterAll(async () => {
  await database?.close();
  await drop?.();
});

/** `count` new dispatches, their open rows leased to the worker, by id. */
async function leased(tag: string, count: number): Promise<string[]> {
  const rows = await database.rows<{ id: string }>(sql`
    with made as (
      insert into webhook_dispatch (event_id, event_type, webhook_id, payload)
      select 'evt_' || ${tag} || '_' || g, 'account.created', 'wh_plan', '{"data":{"id":"acc_1"}}'
      from generate_series(1, ${count}) g
      returning id, webhook_id, next_attempt_at
    ),
    opened as (
      insert into webhook_dispatch_open (dispatch_id, webhook_id, next_attempt_at, locked_by, locked_until)
      select id, webhook_id, next_attempt_at, ${WORKER}, now() + interval '1 minute' from made
    )
    select id from made
  `);
  return rows.map((row) => row.id);
}

const succeeded = (dispatchId: string) => succeededAttempt(dispatchId, "wh_plan");
/** A first attempt the endpoint answered 503: retried in a minute. */
const retried = (dispatchId: string): AttemptRecord => ({
  ...succeeded(dispatchId),
  status: "error",
  retryInMs: 60_000,
  outcome: "retry",
  statusCode: 503,
  errorClass: "http_status",
  errorMessage: "503 Service Unavailable",
});

it("reaches a batch's dispatches by key after the ledger has grown under a plan made while it was small", async () => {
  // Enough batches on a small table for PostgreSQL to settle on a generic plan for the rest of the session.
  for (let batch = 0; batch < 8; batch++) {
    await recordAttempts(database, WORKER, (await leased(`small${batch}`, 3)).map(succeeded), BREAKER);
  }
  // The ledger grows by far more than the plan was made for; nothing analyses it meanwhile.
  await database.rows(sql`
    insert into webhook_dispatch (event_id, event_type, webhook_id, payload, status)
    select 'evt_grown_' || g, 'account.created', 'wh_plan', '{"data":{"id":"acc_1"}}', 'success'
    from generate_series(1, 20000) g
  `);
  const batch = await leased("after", 10);

  // What the statement read of webhook_dispatch, from this transaction's own table statistics.
  const read = await database.transaction(async (tx) => {
    await recordAttempts(tx, WORKER, batch.map(succeeded), BREAKER);
    const [row] = await tx.rows<{ seq_tup_read: string; idx_tup_fetch: string }>(sql`
      select seq_tup_read, idx_tup_fetch from pg_stat_xact_user_tables where relname = 'webhook_dispatch'
    `);
    return { scanned: Number(row!.seq_tup_read), fetched: Number(row!.idx_tup_fetch) };
  });

  expect(read.scanned).toBe(0);
  // The batch's rows fetched by key (a few times each: the update, the attempt's run), where a walk of a whole index
  // would fetch all 20,000.
  expect(read.fetched).toBeGreaterThanOrEqual(10);
  expect(read.fetched).toBeLessThan(1_000);
  const [done] = await database.rows<{ n: number }>(sql`
    select count(*)::int as n from webhook_dispatch d where d.id in (select unnest(${`{${batch.join(",")}}`}::text[]))
      and d.status = 'success' and not exists (select 1 from webhook_dispatch_open o where o.dispatch_id = d.id)
  `);
  expect(done!.n).toBe(10);
});

it("rewrites a ledger row heap-only, and deletes its open row when it succeeds or moves it on when it is retried", async () => {
  const delivered = await leased("hot_success", 5);
  const failed = await leased("hot_retry", 5);
  const written = await database.transaction(async (tx) => {
    // This transaction's own counts: what the record adds to them.
    const counts = async () => {
      const rows = await tx.rows<{ relname: string; updated: string; hot: string; deleted: string }>(sql`
        select c.relname, pg_stat_get_xact_tuples_updated(c.oid) as updated,
          pg_stat_get_xact_tuples_hot_updated(c.oid) as hot, pg_stat_get_xact_tuples_deleted(c.oid) as deleted
        from pg_class c where c.relname in ('webhook_dispatch', 'webhook_dispatch_open')
      `);
      return new Map(rows.map((row) => [row.relname, [Number(row.updated), Number(row.hot), Number(row.deleted)]]));
    };
    const before = await counts();
    await recordAttempts(tx, WORKER, [...delivered.map(succeeded), ...failed.map(retried)], BREAKER);
    const after = await counts();
    const added = (table: string) => {
      const [updated, hotUpdated, deleted] = after.get(table)!.map((n, i) => n - before.get(table)![i]!);
      return { updated, hotUpdated, deleted };
    };
    return { ledger: added("webhook_dispatch"), open: added("webhook_dispatch_open") };
  });
  // Every ledger row rewritten in place (no index reads what a record changes); the open rows of the delivered ones
  // gone, the retried ones' unleased and due later.
  expect(written.ledger).toEqual({ updated: 10, hotUpdated: 10, deleted: 0 });
  expect(written.open).toMatchObject({ updated: 5, deleted: 5 });
  const open = await database.rows<{ id: string; leased: boolean; later: boolean }>(sql`
    select o.dispatch_id as id, o.locked_by is not null or o.locked_until is not null as leased,
      o.next_attempt_at > now() + interval '30 seconds' and o.next_attempt_at = d.next_attempt_at as later
    from webhook_dispatch_open o join webhook_dispatch d on d.id = o.dispatch_id
    where o.dispatch_id in (select unnest(${`{${[...delivered, ...failed].join(",")}}`}::text[]))
    order by o.dispatch_id collate "C"
  `);
  expect(open).toEqual([...failed].sort().map((id) => ({ id, leased: false, later: true })));
});
