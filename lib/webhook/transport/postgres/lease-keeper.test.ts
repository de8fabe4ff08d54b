import { sql } from "drizzle-orm";
import { afterAll, beforeAll, expect, it } from "vitest";
import { pgliteFactory } from "../../../../test/support/harness.ts";
import type { Database } from "../../../db/client.ts";
import { silentLogger } from "../../../log/logger.ts";
import { startLeaseKeeper } from "./lease-keeper.ts";

let database: Database;

beforeAll(async () => {
  ({ database } = await pgliteFactory());
  await database.rows(sql`
    insert into webhook (id, url, events, secret_sealed, created_by)
    values ('wh_1', 'https://example.com/hook', array['*'], 'sealed', 'test')
  `);
  await database.rows(sql`
    insert into webhook_dispatch (id, event_id, event_type, webhook_id, payload)
    values ('wd_held', 'evt_1', 'account.created', 'wh_1', '{}'),
           ('wd_abandoned', 'evt_2', 'account.created', 'wh_1', '{}'),
           ('wd_other', 'evt_3', 'account.created', 'wh_1', '{}')
  `);
  // Leases that run out in a second, on the open rows: held by w1 (held, abandoned), and by another worker.
  await database.rows(sql`
    insert into webhook_dispatch_open (dispatch_id, webhook_id, next_attempt_at, locked_by, locked_until)
    values ('wd_held', 'wh_1', now(), 'w1', now() + interval '1 second'),
           ('wd_abandoned', 'wh_1', now(), 'w1', now() + interval '1 second'),
           ('wd_other', 'wh_1', now(), 'w2', now() + interval '1 second')
  `);
  await database.rows(sql`
    insert into webhook_route_job (id, message, locked_by, locked_until)
    values (1, '{}', 'w1', now() + interval '1 second'), (2, '{}', 'w1', now() + interval '1 second')
  `);
});

afterAll(async () => {
  await database?.close();
});

it("renews the leases its loops hold, and lets the ones stamped with its id but abandoned run out", async () => {
  const keeper = startLeaseKeeper({
    database,
    logger: silentLogger,
    workerId: "w1",
    dispatchLeaseMs: 60_000,
    routeLeaseMs: 60_000,
    everyMs: 3_600_000,
    // wd_other is another worker's: naming it must not take it over.
    held: () => ({ dispatches: ["wd_held", "wd_other"], routeJobs: [1] }),
    inFlight: () => 1,
    lastClaimAt: () => undefined,
  });
  await keeper.renew();
  const renewed = await database.rows<{ id: string; renewed: boolean }>(sql`
    select dispatch_id as id, locked_until > now() + interval '30 seconds' as renewed from webhook_dispatch_open
    union all
    select id::text, locked_until > now() + interval '30 seconds' from webhook_route_job
    order by 1
  `);
  expect(renewed).toEqual([
    { id: "1", renewed: true },
    { id: "2", renewed: false },
    { id: "wd_abandoned", renewed: false },
    { id: "wd_held", renewed: true },
    { id: "wd_other", renewed: false },
  ]);
  const [worker] = await database.rows<{ in_flight: number }>(
    sql`select in_flight from webhook_worker where id = 'w1'`,
  );
  expect(worker!.in_flight).toBe(1);
  await keeper.stop();
  expect(await database.rows(sql`select 1 from webhook_worker where id = 'w1'`)).toEqual([]);
});
