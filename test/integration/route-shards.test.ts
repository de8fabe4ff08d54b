import { sql } from "drizzle-orm";
import pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";
import { openDatabase, type Database } from "../../lib/db/client.ts";
import { routeAndClaim } from "../../lib/db/sql/route-and-claim.ts";
import { enqueueRouteJob } from "../../lib/db/sql/route-jobs.ts";
import { createTestDatabase } from "../support/postgres.ts";
import { routeStatementOptions } from "../support/route-statement.ts";

// Lane steps route from route shards (an event's account hashed into 16) that no other step holds, so two steps at
// once number different webhooks and never wait for each other's webhook_sequence rows
// (hooklane_route_and_claim, lib/db/functions/).

const JOBS = 20;
let database: Database;
let url: string;
let drop: () => Promise<void>;
const shardOf = new Map<string, number>();

beforeAll(async () => {
  const created = await createTestDatabase();
  ({ url, drop } = created);
  database = await openDatabase({ databaseUrl: url, poolMax: 4 });
  await database.rows(sql`insert into account (id, name) values ('acc_shard_x', 'X'), ('acc_shard_y', 'Y')`);
  await database.rows(sql`
    insert into webhook_event_type (internal, method, route, resource, owner_kind, description, example, since)
    values ('payment-debt.created', 'POST', '/v3/payment-debts', 'payment-debt', 'direct', 'A payment debt.', '{}',
      '2026-12-01')
  `);
  await database.rows(sql`
    insert into webhook (id, url, events, account, secret_sealed, created_by)
    values ('wh_shard_x', 'https://x.example.com/hook', array['payment-debt.created'], 'acc_shard_x', 'sealed', 't'),
      ('wh_shard_y', 'https://y.example.com/hook', array['payment-debt.created'], 'acc_shard_y', 'sealed', 't')
  `);
  for (const row of await database.rows<{ account: string; shard: number }>(sql`
    select a as account, hashtext(a) & 15 as shard from unnest(array['acc_shard_x', 'acc_shard_y']) a
  `)) {
    shardOf.set(row.account, row.shard);
  }
  for (let n = 0; n < JOBS; n++) {
    for (const account of ["acc_shard_x", "acc_shard_y"]) {
      await enqueueRouteJob(database, {
        eventId: `evt_shard_${account}_${n}`,
        type: "payment-debt.created",
        resourceId: `pd_${account}_${n}`,
        occurredAt: new Date().toISOString(),
        livemode: false,
        account,
      });
    }
  }
}, 60_000);

afterAll(async () => {
  await database?.close();
  await drop?.();
});

it("a step held open on one account's shard leaves the other account's jobs to a second step, which routes them without waiting", async () => {
  // Two different shards, or the test shows nothing.
  expect(shardOf.get("acc_shard_x")).not.toBe(shardOf.get("acc_shard_y"));
  const holder = new pg.Client({ connectionString: url, application_name: "route-step-held-open" });
  await holder.connect();
  try {
    await holder.query("begin");
    // Step 1 routes one job, from whichever shard it tried first, and stays open: that shard's lock and that
    // webhook's numbering row are held until it commits.
    const held = await holder.query(
      `select hooklane_route_and_claim('w1', 1, 60000, $1::jsonb, 0, 60000, 100, 100, 100, '', '{}'::jsonb)::text as step`,
      [routeStatementOptions().rulesJson],
    );
    expect(JSON.parse(held.rows[0].step).dispatches).toBe(1);
    const [first] = (await holder.query(`select account from webhook_dispatch`)).rows as Array<{ account: string }>;
    const heldAccount = first!.account;
    const otherAccount = heldAccount === "acc_shard_x" ? "acc_shard_y" : "acc_shard_x";

    // Step 2 (another worker) returns with every job of the other account routed and none of the held one's. It
    // would hang here if it waited for step 1: nothing ends step 1 until this resolves.
    const second = await Promise.race([
      routeAndClaim(database, routeStatementOptions({ workerId: "w2", routeLimit: 100 })),
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error("step 2 waited for step 1")), 10_000)),
    ]);
    expect(second.found).toBe(JOBS);
    expect(second.dispatches).toBe(JOBS);
    const byAccount = async () =>
      Object.fromEntries(
        (
          await database.rows<{ account: string; n: number }>(
            sql`select account, count(*)::int as n from webhook_dispatch group by account order by account`,
          )
        ).map((row) => [row.account, row.n]),
      );
    expect(await byAccount()).toEqual({ [otherAccount]: JOBS });

    await holder.query("commit");
    // Step 1's shard is free again: the held account's other jobs route now.
    const third = await routeAndClaim(database, routeStatementOptions({ workerId: "w2", routeLimit: 100 }));
    expect(third.dispatches).toBe(JOBS - 1);
    expect(await byAccount()).toEqual({ acc_shard_x: JOBS, acc_shard_y: JOBS });
    // Each webhook numbered 1..JOBS in its account's publish order.
    for (const account of ["acc_shard_x", "acc_shard_y"]) {
      const rows = await database.rows<{ event_id: string; sequence: number }>(sql`
        select event_id, sequence::int as sequence from webhook_dispatch where account = ${account} order by sequence
      `);
      expect(rows.map((row) => row.sequence)).toEqual(Array.from({ length: JOBS }, (_, i) => i + 1));
      expect(rows.map((row) => row.event_id)).toEqual(
        Array.from({ length: JOBS }, (_, n) => `evt_shard_${account}_${n}`),
      );
    }
  } finally {
    await holder.end();
  }
});
