import { sql } from "drizzle-orm";
import pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { Database } from "../../lib/db/client.ts";
import { silentLogger } from "../../lib/log/logger.ts";
import { startLeaseKeeper } from "../../lib/webhook/transport/postgres/lease-keeper.ts";
import { eventually } from "../support/eventually.ts";
import { postgresFactory } from "../support/postgres.ts";

let database: Database;
let databaseUrl: string;
let drop: () => Promise<void>;

beforeAll(async () => {
  const created = await postgresFactory();
  ({ database, drop } = created);
  databaseUrl = created.databaseUrl!;
  await database.rows(sql`
    insert into webhook (id, url, events, secret_sealed, created_by)
    values ('wh_1', 'https://example.com/hook', array['*'], 'sealed', 'test')
  `);
  await database.rows(sql`
    insert into webhook_dispatch (id, event_id, event_type, webhook_id, payload)
    values ('wd_a', 'evt_a', 'account.created', 'wh_1', '{}'), ('wd_b', 'evt_b', 'account.created', 'wh_1', '{}')
  `);
  await database.rows(sql`
    insert into webhook_dispatch_open (dispatch_id, webhook_id, next_attempt_at, locked_by, locked_until)
    values ('wd_a', 'wh_1', now(), 'w1', now() + interval '1 second'),
           ('wd_b', 'wh_1', now(), 'w1', now() + interval '1 second')
  `);
});

afterAll(async () => {
  await database?.close();
  await drop?.();
});

/** Resolves once some statement on this database waits for a lock (bounded: gives up after 20 s). */
async function someoneWaitsForALock(): Promise<"blocked"> {
  await eventually(
    () =>
      database.rows<{ n: number }>(sql`
        select count(*)::int as n from pg_stat_activity
        where datname = current_database() and wait_event_type = 'Lock'
      `),
    ([row]) => row!.n > 0,
  );
  return "blocked";
}

it("renews the leases it can lock now and never waits for a row the record statement is writing", async () => {
  // The record statement: it has written wd_b's open row (a retry, its lease released) and goes on to wd_a's.
  const record = new pg.Client({ connectionString: databaseUrl });
  await record.connect();
  await record.query("begin");
  await record.query(
    `update webhook_dispatch_open set locked_until = null, locked_by = null where dispatch_id = 'wd_b'`,
  );

  const keeper = startLeaseKeeper({
    database,
    logger: silentLogger,
    workerId: "w1",
    dispatchLeaseMs: 60_000,
    routeLeaseMs: 60_000,
    everyMs: 3_600_000,
    held: () => ({ dispatches: ["wd_a", "wd_b"], routeJobs: [] }),
    inFlight: () => 2,
    lastClaimAt: () => undefined,
  });
  try {
    // The keeper renews once as it starts; a second renewal beside it waits for its heartbeat row, which is not the
    // wait this test looks for. Let that one finish, and put wd_a's lease back to short.
    const renewedA = () =>
      database.rows<{ renewed: boolean }>(sql`
        select locked_until > now() + interval '30 seconds' as renewed
        from webhook_dispatch_open where dispatch_id = 'wd_a'
      `);
    await eventually(renewedA, ([row]) => row!.renewed);
    await database.rows(
      sql`update webhook_dispatch_open set locked_until = now() + interval '1 second' where dispatch_id = 'wd_a'`,
    );
    // Waiting for wd_b while holding wd_a, which the record wants next, is a deadlock PostgreSQL breaks after a
    // second by throwing one of the two away.
    const first = await Promise.race([keeper.renew().then(() => "renewed" as const), someoneWaitsForALock()]);
    expect(first).toBe("renewed");
    const [renewed] = await renewedA();
    expect(renewed!.renewed).toBe(true);
    await record.query(
      `update webhook_dispatch_open set locked_until = null, locked_by = null where dispatch_id = 'wd_a'`,
    );
    await record.query("commit");
    const rows = await database.rows<{ id: string; locked_by: string | null }>(
      sql`select dispatch_id as id, locked_by from webhook_dispatch_open order by dispatch_id`,
    );
    expect(rows).toEqual([
      { id: "wd_a", locked_by: null },
      { id: "wd_b", locked_by: null },
    ]);
  } finally {
    await record.query("rollback").catch(() => {});
    await record.end();
    await keeper.stop();
  }
});
