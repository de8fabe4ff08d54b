import { sql } from "drizzle-orm";
import { afterAll, beforeAll, expect, it } from "vitest";
import { openDatabase, type Database } from "../../lib/db/client.ts";
import { recordAttempts, type BreakerRule } from "../../lib/db/sql/record-attempts.ts";
import { succeededAttempt } from "../support/attempt-records.ts";
import { createTestDatabase } from "../support/postgres.ts";

// The record statement keeps one plan per connection. Made while the ledger was small, that plan used to join each
// batch to webhook_dispatch through a scan of the whole table, and kept doing so as the table grew (migration 0024).

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

/** `count` new dispatches leased to the worker, by id. */
async function leased(tag: string, count: number): Promise<string[]> {
  const rows = await database.rows<{ id: string }>(sql`
    insert into webhook_dispatch (event_id, event_type, webhook_id, payload, locked_by, locked_until)
    select 'evt_' || ${tag} || '_' || g, 'account.created', 'wh_plan', '{"data":{"id":"acc_1"}}', ${WORKER},
      now() + interval '1 minute'
    from generate_series(1, ${count}) g
    returning id
  `);
  return rows.map((row) => row.id);
}

const succeeded = (dispatchId: string) => succeededAttempt(dispatchId, "wh_plan");

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
  // The batch's rows fetched by key (a few times each: the update, the attempt's run, its foreign key), where a
  // walk of a whole index would fetch all 20,000.
  expect(read.fetched).toBeGreaterThanOrEqual(10);
  expect(read.fetched).toBeLessThan(1_000);
  const [done] = await database.rows<{ n: number }>(sql`
    select count(*)::int as n from webhook_dispatch where id in (select unnest(${`{${batch.join(",")}}`}::text[]))
      and status = 'success' and locked_by is null
  `);
  expect(done!.n).toBe(10);
});
