import { sql } from "drizzle-orm";
import { afterAll, beforeAll, expect, it } from "vitest";
import { openDatabase, type Database } from "../../lib/db/client.ts";
import type { InFlightCaps } from "../../lib/db/sql/claim-dispatches.ts";
import { enqueueRouteJob, routeJobs } from "../../lib/db/sql/route-jobs.ts";
import { ROUTE_RULES_JSON } from "../../lib/webhook/outbound/webhook-out-route.handler.ts";
import { createTestDatabase } from "../support/postgres.ts";
import { routeStatementOptions } from "../support/route-statement.ts";

// Routing keeps one plan per connection for finding an event's webhooks. Made while there were a handful, that plan
// used to read every webhook for every event routed afterwards (migrations 0025 and 0026).

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

/** The route loop's statement as worker w1 runs it, leasing none of the new dispatches. */
const routeOptions = routeStatementOptions();

/** Routes one event alone, as the shared consumer does: the ids of the dispatches it created. */
async function routeOne(db: Database, n: string): Promise<number> {
  const [row] = await db.rows<{ ids: string[] }>(
    sql`select hooklane_route_event(${JSON.stringify(message(n))}::jsonb, ${rule}::jsonb) as ids`,
  );
  return row!.ids.length;
}

/** Routes three events in one route statement, as the route loop does: the dispatches it created. */
async function routeBatch(db: Database, n: string): Promise<number> {
  for (const i of [1, 2, 3]) await enqueueRouteJob(db, message(`${n}_${i}`));
  return (await routeJobs(db, routeOptions)).dispatches;
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

it("leases a route statement's new dispatches by their keys, not by reading past the webhook's backlog", async () => {
  // The session's claims are planned first on a small ledger, each leasing what it routed.
  for (let i = 0; i < 8; i++) {
    await enqueueRouteJob(database, message(`claimwarm${i}`));
    expect((await routeJobs(database, { ...routeOptions, claimLimit: 10 })).leased).toHaveLength(1);
  }
  // Then wh_a gets 5,000 dispatches due and waiting (a slow subscriber's, say) before one more of its events is routed.
  await database.rows(sql`
    insert into webhook_dispatch (event_id, event_type, webhook_id, account, payload)
    select 'evt_backlog_' || g, 'payment-debt.created', 'wh_a', 'acc_a', '{"data":{"id":"pd_backlog"}}'
    from generate_series(1, 5000) g
  `);
  await enqueueRouteJob(database, message("backlog_new"));
  const read = await database.transaction(async (tx) => {
    // The session's counts not yet reported are in the view too: what the route statement adds to them.
    const counts = async () => {
      const [row] = await tx.rows<{ idx_tup_fetch: string; seq_tup_read: string }>(sql`
        select idx_tup_fetch, seq_tup_read from pg_stat_xact_user_tables where relname = 'webhook_dispatch'
      `);
      return { fetched: Number(row!.idx_tup_fetch), scanned: Number(row!.seq_tup_read) };
    };
    const before = await counts();
    const routed = await routeJobs(tx, { ...routeOptions, claimLimit: 10 });
    const after = await counts();
    return {
      leased: routed.leased.map((d) => d.eventId),
      fetched: after.fetched - before.fetched,
      scanned: after.scanned - before.scanned,
    };
  });
  expect(read.leased).toEqual(["evt_routeplan_backlog_new"]);
  expect(read.scanned).toBe(0);
  expect(read.fetched).toBeLessThan(20);
});

it("writes the dispatches its claim takes once, inserted leased, and gives back the ones it does not take", async () => {
  const written = async (claimLimit: number, perWebhook: number, n: string, caps: Partial<InFlightCaps> = {}) =>
    database.transaction(async (tx) => {
      for (const i of [1, 2, 3]) await enqueueRouteJob(tx, message(`${n}_${i}`));
      // The session's counts not yet reported are in the view too: what the route statement adds to them.
      const counts = async () => {
        const [row] = await tx.rows<{ n_tup_ins: string; n_tup_upd: string }>(sql`
          select n_tup_ins, n_tup_upd from pg_stat_xact_user_tables where relname = 'webhook_dispatch'
        `);
        return { inserted: Number(row!.n_tup_ins), updated: Number(row!.n_tup_upd) };
      };
      const before = await counts();
      const routed = await routeJobs(tx, {
        ...routeOptions,
        claimLimit,
        caps: { ...routeOptions.caps, perWebhook, ...caps },
      });
      const after = await counts();
      return {
        leased: routed.leased.length,
        inserted: after.inserted - before.inserted,
        updated: after.updated - before.updated,
      };
    });
  // All three taken: three rows inserted, none updated (the claim used to lease each with an update).
  expect(await written(10, 100, "once")).toEqual({ leased: 3, inserted: 3, updated: 0 });
  // Under a cap of one in flight per webhook (nothing in flight): one inserted leased and taken, two not leased.
  await database.rows(sql`delete from webhook_lane_in_flight`);
  expect(await written(10, 1, "capped")).toEqual({ leased: 1, inserted: 3, updated: 0 });
  // Under a cap of one per origin, which the insert does not weigh: three inserted leased, one taken, two given back.
  await database.rows(sql`delete from webhook_lane_in_flight`);
  expect(await written(10, 100, "origin", { perOrigin: 1 })).toEqual({ leased: 1, inserted: 3, updated: 2 });
  const [free] = await database.rows<{ n: number }>(sql`
    select count(*)::int as n from webhook_dispatch
    where event_id like any (array['evt_routeplan_capped_%', 'evt_routeplan_origin_%']) and locked_by is null
      and locked_until is null
  `);
  expect(free!.n).toBe(4);
});
