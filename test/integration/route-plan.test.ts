import { sql } from "drizzle-orm";
import { afterAll, beforeAll, expect, it } from "vitest";
import { openDatabase, type Database } from "../../lib/db/client.ts";
import { ROUTE_RULES_JSON } from "../../lib/webhook/outbound/webhook-out-route.handler.ts";
import { createTestDatabase } from "../support/postgres.ts";

// Routing keeps one plan per connection for finding an event's webhooks. Made while there were a handful, that plan
// used to read every webhook for every event routed afterwards (migration 0025).

let database: Database;
let drop: () => Promise<void>;
const rule = JSON.stringify((JSON.parse(ROUTE_RULES_JSON) as Record<string, unknown>)["payment-debt.created"]);

beforeAll(async () => {
  const created = await createTestDatabase();
  drop = created.drop;
  database = await openDatabase({ databaseUrl: created.url, poolMax: 1 });
  await database.rows(sql`insert into account (id, name) values ('acc_a', 'A'), ('acc_b', 'B')`);
  await database.rows(sql`
    insert into webhook_event_type (internal, method, route, resource, owner_kind, description, example, since)
    values ('payment-debt.created', 'POST', '/v3/payment-debts', 'payment-debt', 'direct', 'A payment debt.', '{}',
      '2026-12-01')
  `);
  await database.rows(sql`
    insert into webhook (id, url, events, account, secret_sealed, created_by)
    values ('wh_a', 'https://example.com/a', array['payment-debt.created'], 'acc_a', 'sealed', 'test')
  `);
}, 60_000);

afterAll(async () => {
  await database?.close();
  await drop?.();
});

/** Routes one event of acc_a's about payment debt `n`: the ids of the dispatches it created. */
async function route(db: Database, n: string): Promise<string[]> {
  const message = {
    eventId: `evt_routeplan_${n}`,
    type: "payment-debt.created",
    resourceId: `pd_${n}`,
    occurredAt: new Date().toISOString(),
    livemode: false,
    account: "acc_a",
  };
  const [row] = await db.rows<{ ids: string[] }>(
    sql`select hooklane_route_event(${JSON.stringify(message)}::jsonb, ${rule}::jsonb) as ids`,
  );
  return row!.ids;
}

it("finds an event's webhooks without reading every webhook, after thousands arrived under a plan made with one", async () => {
  // Enough events with one webhook for the session to settle on a generic plan.
  for (let i = 0; i < 8; i++) await route(database, `small${i}`);
  // Another account's webhooks, of another type, by the thousand; nothing analyses the table meanwhile.
  await database.rows(sql`
    insert into webhook (url, events, account, secret_sealed, created_by)
    select 'https://example.com/b' || g, array['account.created'], 'acc_b', 'sealed', 'test'
    from generate_series(1, 5000) g
  `);
  const read = await database.transaction(async (tx) => {
    const routed = await route(tx, "after");
    const [row] = await tx.rows<{ seq_tup_read: string }>(sql`
      select seq_tup_read from pg_stat_xact_user_tables where relname = 'webhook'
    `);
    return { routed: routed.length, scanned: Number(row!.seq_tup_read) };
  });
  expect(read.routed).toBe(1);
  expect(read.scanned).toBe(0);
});
