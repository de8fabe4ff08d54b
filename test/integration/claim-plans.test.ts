import pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { Database } from "../../lib/db/client.ts";
import { postgresFactory } from "../support/postgres.ts";

let database: Database;
let client: pg.Client;
let drop: () => Promise<void>;

/**
 * The statistics of a quiet moment: 16 webhooks, 4,000 finished dispatches, analysed. Then a burst of 4,000
 * open ones arrives, which the statistics do not know of yet (autovacuum analyses a minute later at best).
 */
beforeAll(async () => {
  const created = await postgresFactory();
  ({ database, drop } = created);
  client = new pg.Client({ connectionString: created.databaseUrl });
  await client.connect();
  await client.query(`
    insert into webhook (id, url, events, secret_sealed, created_by)
    select 'wh_' || lpad(n::text, 2, '0'), 'https://example.com/' || n, array['*'], 'sealed', 'test'
    from generate_series(1, 16) n
  `);
  const dispatches = (status: string, from: number) => `
    insert into webhook_dispatch (id, event_id, event_type, webhook_id, payload, status, completed_at)
    select 'wd_' || n, 'evt_' || n, 'account.created', 'wh_' || lpad((n % 16 + 1)::text, 2, '0'), '{}',
      '${status}', case when '${status}' = 'success' then now() end
    from generate_series(${from}, ${from + 3_999}) n
  `;
  await client.query(dispatches("success", 1));
  await client.query("analyze webhook_dispatch");
  await client.query(dispatches("pending", 10_001));
}, 60_000);

afterAll(async () => {
  await client?.end();
  await database?.close();
  await drop?.();
});

/** Index tuples `statement` read, per index of webhook_dispatch (this backend's counters before and after). */
async function indexReads(statement: string): Promise<{ rows: unknown[]; reads: Record<string, number> }> {
  const counters = async () => {
    const { rows } = await client.query<{ index: string; read: string }>(`
      select c.relname as index, pg_stat_get_xact_tuples_returned(c.oid) as read
      from pg_index i join pg_class c on c.oid = i.indexrelid
      where i.indrelid = 'webhook_dispatch'::regclass
    `);
    return new Map(rows.map((row) => [row.index, Number(row.read)]));
  };
  await client.query("begin");
  try {
    const before = await counters();
    const { rows } = await client.query(statement);
    const after = await counters();
    return { rows, reads: Object.fromEntries([...after].map(([index, read]) => [index, read - before.get(index)!])) };
  } finally {
    await client.query("rollback");
  }
}

it("walks to the next open webhook through its index even when the statistics say nothing is open", async () => {
  // The trap: planned on these statistics, the plain lookup reads every open row from the due-time index and
  // sorts them, to return one.
  const plain = await indexReads(`
    select d.webhook_id, d.next_attempt_at from webhook_dispatch d
    where d.status in ('pending', 'error') and d.webhook_id > 'wh_03'
    order by d.webhook_id, d.next_attempt_at limit 1
  `);
  expect(plain.reads.webhook_dispatch_due_idx).toBeGreaterThan(3_000);

  const walked = await indexReads(`select * from hooklane_next_open_webhook('wh_03')`);
  expect(walked.rows).toEqual([{ webhook_id: "wh_04", next_attempt_at: expect.any(Date) }]);
  expect(walked.reads.webhook_dispatch_due_idx).toBe(0);
  // The first open entry after the cursor, and nothing before it but finished rows' dead entries: none here.
  expect(walked.reads.webhook_dispatch_webhook_due_idx).toBeLessThanOrEqual(2);
});

it("walks a webhook's due rows through its own index, reading only the rows it leases", async () => {
  // The trap: with the webhook a parameter, the plan kept for the session (or one made on these statistics) read
  // the due-time index past every other webhook's open rows, or every open row of the webhook, to lease 16.
  const claim = (after: string, n: number) =>
    indexReads(`
      select jsonb_path_query_array(
        hooklane_claim_dispatches('w1', 16, 30000, '${after}', null, 16, 1000, 1000, 1, 250, '{}', ${n}, '{}', null),
        '$.rows[*].id') as ids
    `);
  // Plans made on the first calls and the one kept after them (PL/pgSQL plans anew for five calls).
  for (let n = 1; n <= 8; n++) {
    const after = `wh_${String(n + 1).padStart(2, "0")}`;
    const webhook = `wh_${String(n + 2).padStart(2, "0")}`;
    const { rows, reads } = await claim(after, n);
    const { rows: earliest } = await client.query<{ id: string }>(
      `select id from webhook_dispatch where webhook_id = $1 and status = 'pending'
       order by next_attempt_at, id limit 16`,
      [webhook],
    );
    expect((rows[0] as { ids: string[] }).ids.sort()).toEqual(earliest.map((row) => row.id).sort());
    expect(reads.webhook_dispatch_due_idx).toBe(0);
    expect(reads.webhook_dispatch_webhook_created_idx).toBe(0);
    // The next open webhook's first entry, then its 16 due rows.
    expect(reads.webhook_dispatch_webhook_due_idx).toBeLessThanOrEqual(17);
  }
});
