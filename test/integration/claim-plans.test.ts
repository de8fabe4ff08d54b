import pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { Database } from "../../lib/db/client.ts";
import { openDispatches } from "../support/open-dispatches.ts";
import { postgresFactory } from "../support/postgres.ts";

let database: Database;
let client: pg.Client;
let drop: () => Promise<void>;

/**
 * The statistics of a quiet moment: 16 webhooks, 4,000 finished dispatches and no open ones, analysed. Then a burst
 * of 4,000 open ones arrives (ledger and open rows), which the statistics do not know of yet (autovacuum analyses a
 * minute later at best).
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
  await client.query("analyze webhook_dispatch, webhook_dispatch_open");
  await client.query(dispatches("pending", 10_001));
  await openDispatches(database);
}, 60_000);

afterAll(async () => {
  await client?.end();
  await database?.close();
  await drop?.();
});

/** Index tuples `statement` read, per index of the ledger and the open set (this backend's counters, before and after). */
async function indexReads(statement: string): Promise<{ rows: unknown[]; reads: Record<string, number> }> {
  const counters = async () => {
    const { rows } = await client.query<{ index: string; read: string }>(`
      select c.relname as index, pg_stat_get_xact_tuples_returned(c.oid) as read
      from pg_index i join pg_class c on c.oid = i.indexrelid
      where i.indrelid in ('webhook_dispatch'::regclass, 'webhook_dispatch_open'::regclass)
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

/** A claim of up to 16 for w1, one step of its walk from `after`: the ids it leased, and what it read. */
const claim = (after: string) =>
  indexReads(`
    select jsonb_path_query_array(
      hooklane_claim_dispatches('w1', 16, 30000, '${after}', null, 16, 1000, 1000, 1, 250, '{}')::jsonb,
      '$.groups[*].rows[*].id') as ids
  `);

/** The 16 earliest open dispatches of `webhook`. */
async function earliest(webhook: string): Promise<string[]> {
  const { rows } = await client.query<{ id: string }>(
    `select dispatch_id as id from webhook_dispatch_open where webhook_id = $1
     order by next_attempt_at, dispatch_id limit 16`,
    [webhook],
  );
  return rows.map((row) => row.id).sort();
}

/**
 * What a claim of 16 may read: the next open webhook's first entry and its 16 due rows from the open set's index
 * (never the webhook's other open rows, nor any other webhook's), the 16 open rows it leases by their key, and their
 * ledger rows by the ledger's key. No other index.
 */
function expectReadOnlyWhatItLeases(reads: Record<string, number>): void {
  const { webhook_dispatch_open_webhook_due_idx: walked, ...others } = reads;
  expect(walked).toBeLessThanOrEqual(17);
  expect(Object.fromEntries(Object.entries(others).filter(([, read]) => read > 0))).toEqual({
    webhook_dispatch_open_pkey: 16,
    webhook_dispatch_pkey: 16,
  });
}

it("finds the next open webhook by its first entry and reaches the ledger by key even when the statistics say nothing is open", async () => {
  const { rows, reads } = await claim("wh_03");
  expect((rows[0] as { ids: string[] }).ids.sort()).toEqual(await earliest("wh_04"));
  expectReadOnlyWhatItLeases(reads);
});

it("walks a webhook's due rows through the open set's index, reading only the rows it leases, on every plan", async () => {
  // The trap: with the webhook a parameter, the plan kept for the session (or one made on these statistics) could
  // read past every other webhook's open rows, or every open row of the webhook, to lease 16.
  // Plans made on the first calls and the one kept after them (PL/pgSQL plans anew for five calls).
  for (let n = 1; n <= 8; n++) {
    const after = `wh_${String(n + 1).padStart(2, "0")}`;
    const webhook = `wh_${String(n + 2).padStart(2, "0")}`;
    const { rows, reads } = await claim(after);
    expect((rows[0] as { ids: string[] }).ids.sort()).toEqual(await earliest(webhook));
    expectReadOnlyWhatItLeases(reads);
  }
});
