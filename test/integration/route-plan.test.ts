import { sql } from "drizzle-orm";
import { afterAll, beforeAll, expect, it } from "vitest";
import { openDatabase, type Database } from "../../lib/db/client.ts";
import type { InFlightCaps } from "../../lib/db/sql/claim-dispatches.ts";
import { routeAndClaim } from "../../lib/db/sql/route-and-claim.ts";
import { enqueueRouteJob } from "../../lib/db/sql/route-jobs.ts";
import { ROUTE_RULES_JSON } from "../../lib/webhook/outbound/webhook-out-route.handler.ts";
import { createTestDatabase } from "../support/postgres.ts";
import { routeStatementOptions } from "../support/route-statement.ts";

// Routing keeps one plan per connection for finding an event's webhooks. Made while there were a handful, that plan
// used to read every webhook for every event routed afterwards (hooklane_route_events, lib/db/functions/).

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

/** A route message of acc_a's about payment debt `n`. */
const message = (n: string) => ({
  eventId: `evt_routeplan_${n}`,
  type: "payment-debt.created",
  resourceId: `pd_${n}`,
  occurredAt: new Date().toISOString(),
  livemode: false,
  account: "acc_a",
});

/** The lane's step as worker w1 runs it, claiming none of the new dispatches. */
const routeOptions = routeStatementOptions();

/** Routes one event alone, as the shared consumer does: the dispatches it created. */
async function routeOne(db: Database, n: string): Promise<number> {
  const [row] = await db.rows<{ ids: string[] }>(sql`
    select ids from hooklane_route_events(
      array[${JSON.stringify(message(n))}::jsonb], array[${rule}::jsonb])
  `);
  return row!.ids.length;
}

/** Routes three events in one step, as the lane does: the dispatches it created. */
async function routeBatch(db: Database, n: string): Promise<number> {
  for (const i of [1, 2, 3]) await enqueueRouteJob(db, message(`${n}_${i}`));
  return (await routeAndClaim(db, routeOptions)).dispatches;
}

it("finds an event's webhooks without reading every webhook, after thousands arrived under a plan made with one", async () => {
  // Enough events with one webhook for the session to settle on generic plans.
  for (let i = 0; i < 8; i++) {
    await routeOne(database, `small${i}`);
    await routeBatch(database, `smallbatch${i}`);
  }
  // Another account's webhooks, of another type, by the thousand; nothing analyses the table meanwhile.
  await database.rows(sql`
    insert into webhook (url, events, account, secret_sealed, created_by)
    select 'https://example.com/b' || g, array['account.created'], 'acc_b', 'sealed', 'test'
    from generate_series(1, 5000) g
  `);
  const read = (route: (tx: Database) => Promise<number>) =>
    database.transaction(async (tx) => {
      const routed = await route(tx);
      const [row] = await tx.rows<{ seq_tup_read: string; idx_tup_fetch: string }>(sql`
        select seq_tup_read, idx_tup_fetch from pg_stat_xact_user_tables where relname = 'webhook'
      `);
      return { routed, scanned: Number(row!.seq_tup_read), fetchedUnder: Number(row!.idx_tup_fetch) < 100 };
    });
  expect(await read((tx) => routeOne(tx, "after"))).toEqual({ routed: 1, scanned: 0, fetchedUnder: true });
  expect(await read((tx) => routeBatch(tx, "afterbatch"))).toEqual({ routed: 3, scanned: 0, fetchedUnder: true });
});

it("a step writes each dispatch once: its ledger row inserted and never updated, its open row inserted, and the ones its claim takes leased by a heap-only update of the open row", async () => {
  // Nothing else open: what the step's claim takes is what it routed.
  await database.rows(sql`delete from webhook_dispatch_open`);
  const written = async (n: string, caps: Partial<InFlightCaps> = {}) =>
    database.transaction(async (tx) => {
      for (const i of [1, 2, 3]) await enqueueRouteJob(tx, message(`${n}_${i}`));
      // This transaction's own counts: what the step adds to them.
      const counts = async () => {
        const rows = await tx.rows<{ relname: string; inserted: string; updated: string; hot: string }>(sql`
          select c.relname, pg_stat_get_xact_tuples_inserted(c.oid) as inserted,
            pg_stat_get_xact_tuples_updated(c.oid) as updated, pg_stat_get_xact_tuples_hot_updated(c.oid) as hot
          from pg_class c where c.relname in ('webhook_dispatch', 'webhook_dispatch_open')
        `);
        return new Map(rows.map((row) => [row.relname, [Number(row.inserted), Number(row.updated), Number(row.hot)]]));
      };
      const before = await counts();
      const step = await routeAndClaim(tx, {
        ...routeOptions,
        claimLimit: 10,
        caps: { ...routeOptions.caps, ...caps },
      });
      const after = await counts();
      const added = (table: string) => {
        const [inserted, updated, hotUpdated] = after.get(table)!.map((n, i) => n - before.get(table)![i]!);
        return { inserted, updated, hotUpdated };
      };
      const [leases] = await tx.rows<{ leased: number; free: number }>(sql`
        select count(*) filter (where o.locked_by = 'w1')::int as leased,
          count(*) filter (where o.locked_by is null and o.locked_until is null)::int as free
        from webhook_dispatch d join webhook_dispatch_open o on o.dispatch_id = d.id
        where d.event_id like ${`evt_routeplan_${n}_%`}
      `);
      return {
        dispatches: step.dispatches,
        taken: step.claim!.dispatches.length,
        ledger: added("webhook_dispatch"),
        open: added("webhook_dispatch_open"),
        ...leases!,
      };
    });
  // All three taken: each ledger row and open row inserted once, and each open row leased by a heap-only update.
  expect(await written("once")).toEqual({
    dispatches: 3,
    taken: 3,
    ledger: { inserted: 3, updated: 0, hotUpdated: 0 },
    open: { inserted: 3, updated: 3, hotUpdated: 3 },
    leased: 3,
    free: 0,
  });
  // Under a cap of one in flight per webhook (nothing in flight): one leased, the other two left open and unleased.
  await database.rows(sql`delete from webhook_lane_in_flight`);
  expect(await written("capped", { perWebhook: 1 })).toEqual({
    dispatches: 3,
    taken: 1,
    ledger: { inserted: 3, updated: 0, hotUpdated: 0 },
    open: { inserted: 3, updated: 1, hotUpdated: 1 },
    leased: 1,
    free: 2,
  });
});
