import { sql } from "drizzle-orm";
import { afterAll, beforeAll, beforeEach, expect, it } from "vitest";
import { openDatabase, type Database } from "../../lib/db/client.ts";
import { pruneLedger } from "../../lib/db/sql/prune-ledger.ts";
import { recordAttempts, type BreakerRule } from "../../lib/db/sql/record-attempts.ts";
import { succeededAttempt } from "../support/attempt-records.ts";
import { eventually } from "../support/eventually.ts";
import { createTestDatabase } from "../support/postgres.ts";

// An attempt belongs to its dispatch without a foreign key: the record statement locks the rows it writes attempts
// for, and deleting dispatches deletes their attempts (trigger webhook_dispatch_gone). Real PostgreSQL, two sessions.

const WORKER = "attempt-integrity";
const BREAKER: BreakerRule = { threshold: 5, openBaseMs: 1_000, openMaxMs: 60_000, connectionClasses: ["timeout"] };

let database: Database;
let drop: () => Promise<void>;

beforeAll(async () => {
  const created = await createTestDatabase();
  drop = created.drop;
  database = await openDatabase({ databaseUrl: created.url });
}, 60_000);

afterAll(async () => {
  await database?.close();
  await drop?.();
});

beforeEach(async () => {
  await database.rows(sql`delete from webhook`);
  await database.rows(sql`
    insert into webhook (id, url, events, secret_sealed, created_by)
    values ('wh_a', 'https://example.com/a', array['*'], 'sealed', 'test'),
           ('wh_b', 'https://example.com/b', array['*'], 'sealed', 'test')
  `);
});

/** A dispatch of `webhook`, its open row leased to `worker`. */
async function dispatch(webhook: string, tag: string, worker = WORKER): Promise<string> {
  const [row] = await database.rows<{ id: string }>(sql`
    with made as (
      insert into webhook_dispatch (event_id, event_type, webhook_id, payload)
      values (${`evt_${tag}`}, 'account.created', ${webhook}, '{"data":{"id":"acc_1"}}')
      returning id, webhook_id, next_attempt_at
    ),
    opened as (
      insert into webhook_dispatch_open (dispatch_id, webhook_id, next_attempt_at, locked_by, locked_until)
      select id, webhook_id, next_attempt_at, ${worker}, now() + interval '1 minute' from made
    )
    select id from made
  `);
  return row!.id;
}

async function attemptsOf(ids: readonly string[]): Promise<number> {
  const [row] = await database.rows<{ n: number }>(sql`
    select count(*)::int as n from webhook_attempt where dispatch_id = any (${`{${ids.join(",")}}`}::text[])
  `);
  return row!.n;
}

/** Resolves once a session running a statement like `query` waits for a lock. */
async function lockWaitOf(query: string): Promise<void> {
  await eventually(
    async () =>
      (
        await database.rows<{ n: number }>(sql`
          select count(*)::int as n from pg_stat_activity
          where datname = current_database() and wait_event_type = 'Lock' and query like ${`%${query}%`}
        `)
      )[0]!.n,
    (n) => n > 0,
  );
}

it("deletes a dispatch's attempts with it, whoever deletes it", async () => {
  const pruned = await dispatch("wh_a", "pruned");
  const kept = await dispatch("wh_a", "kept");
  const ended = await dispatch("wh_b", "ended");
  await recordAttempts(database, WORKER, [succeededAttempt(pruned, "wh_a"), succeededAttempt(kept, "wh_a")], BREAKER);
  await recordAttempts(database, WORKER, [succeededAttempt(ended, "wh_b")], BREAKER);
  expect(await attemptsOf([pruned, kept, ended])).toBe(3);

  // Retention: created and finished long ago (only this one), pruned with its attempts whatever their age.
  await database.rows(sql`
    update webhook_dispatch set created_at = now() - interval '40 days', completed_at = now() - interval '40 days'
    where id = ${pruned}
  `);
  const step = await pruneLedger(database, { cutoff: new Date(Date.now() - 30 * 86_400_000), limit: 100 });
  expect(step.dispatches).toBe(1);
  expect(await attemptsOf([pruned])).toBe(0);
  expect(await attemptsOf([kept])).toBe(1);

  // A webhook deleted outright (a listen session ended): its dispatches cascade, and their attempts go too.
  await database.rows(sql`delete from webhook where id = 'wh_b'`);
  expect(await attemptsOf([ended])).toBe(0);
  expect(await attemptsOf([kept])).toBe(1);
});

it("writes nothing for a dispatch deleted while its record waited, and the rest of the batch lands", async () => {
  const doomed = await dispatch("wh_b", "doomed");
  const other = await dispatch("wh_a", "other");
  let recording: Promise<string> | undefined;
  // The webhook is deleted in a transaction that commits only once the record waits for it.
  await database.transaction(async (tx) => {
    await tx.rows(sql`delete from webhook where id = 'wh_b'`);
    recording = recordAttempts(
      database,
      WORKER,
      [succeededAttempt(doomed, "wh_b"), succeededAttempt(other, "wh_a")],
      BREAKER,
    ).then(
      () => "recorded",
      (error: Error) => error.message,
    );
    await lockWaitOf("hooklane_record_attempts");
  });
  expect(await recording).toBe("recorded");
  expect(await attemptsOf([doomed])).toBe(0);
  expect(await attemptsOf([other])).toBe(1);
  const [row] = await database.rows<{ status: string }>(sql`select status from webhook_dispatch where id = ${other}`);
  expect(row!.status).toBe("success");
});

it("records the attempt of a lease that ran out, and a delete waits for that record", async () => {
  // Another worker holds the row now: the dispatch stays as it is, the attempt is logged.
  const taken = await dispatch("wh_a", "taken", "another-worker");
  let deleting: Promise<unknown> | undefined;
  // The record's transaction commits only once the delete waits for it.
  await database.transaction(async (tx) => {
    await recordAttempts(tx, WORKER, [succeededAttempt(taken, "wh_a")], BREAKER);
    const [written] = await tx.rows<{ n: number }>(
      sql`select count(*)::int as n from webhook_attempt where dispatch_id = ${taken}`,
    );
    expect(written!.n).toBe(1);
    // The record holds the row (FOR KEY SHARE) until it commits: deleting the dispatch waits for it.
    deleting = database.rows(sql`delete from webhook_dispatch where id = ${taken}`);
    const [row] = await database.rows<{ status: string; locked_by: string }>(sql`
      select d.status, o.locked_by from webhook_dispatch d join webhook_dispatch_open o on o.dispatch_id = d.id
      where d.id = ${taken}
    `);
    expect(row).toEqual({ status: "pending", locked_by: "another-worker" });
    await lockWaitOf("delete from webhook_dispatch");
  });
  await deleting;
  // It went, with its open row and the attempt the record wrote before it.
  expect(await attemptsOf([taken])).toBe(0);
  const [open] = await database.rows<{ n: number }>(sql`select count(*)::int as n from webhook_dispatch_open`);
  expect(open!.n).toBe(0);
  const [left] = await database.rows<{ n: number }>(sql`select count(*)::int as n from webhook_attempt`);
  expect(left!.n).toBe(0);
});
