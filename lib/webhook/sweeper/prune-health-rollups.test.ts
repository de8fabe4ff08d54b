import { sql } from "drizzle-orm";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { Database } from "../../db/client.ts";
import { pruneHealthRollups } from "../../db/sql/prune-health-rollups.ts";
import { pgliteFactory } from "../../../test/support/harness.ts";

let database: Database;

beforeAll(async () => {
  ({ database } = await pgliteFactory());
  await database.rows(sql`
    insert into webhook (id, url, events, secret_sealed, created_by) values ('wh_pruned', 'https://example.com', '{*}', 'x', 't')`);
}, 120_000);
afterAll(async () => {
  await database?.close();
});

it("drops hourly rollups older than eight days and lane minutes older than one, in batches, keeping the rest", async () => {
  await database.rows(sql`
    insert into webhook_health_hour (webhook_id, hour, bucket, attempts, succeeded)
    select 'wh_pruned', date_trunc('hour', now()) - h * interval '1 hour', b, 1, 1
    from generate_series(0, 215) h, generate_series(0, 2) b`);
  await database.rows(sql`
    insert into webhook_lane_minute (minute, attempts, succeeded)
    select date_trunc('minute', now()) - m * interval '1 minute', 1, 1 from generate_series(0, 1_499) m`);

  // 216 hours × 3 buckets: the 24 hours past eight days go (72 rows), and 60 minutes past one day, in batches of 50.
  const rounds: boolean[] = [];
  for (let more = true; more && rounds.length < 10;) rounds.push((more = await pruneHealthRollups(database, 50)));
  expect(rounds.at(-1)).toBe(false);
  expect(rounds.length).toBeGreaterThan(1);

  const [left] = await database.rows<{
    hours: number | string;
    old_hours: number | string;
    minutes: number | string;
    old_minutes: number | string;
  }>(sql`
    select (select count(*) from webhook_health_hour) as hours,
      (select count(*) from webhook_health_hour where hour < now() - interval '192 hours') as old_hours,
      (select count(*) from webhook_lane_minute) as minutes,
      (select count(*) from webhook_lane_minute where minute < now() - interval '24 hours') as old_minutes`);
  expect([Number(left!.old_hours), Number(left!.old_minutes)]).toEqual([0, 0]);
  // Everything younger stays (the hour or minute on the boundary may go either way).
  expect(Number(left!.hours)).toBeGreaterThanOrEqual(191 * 3);
  expect(Number(left!.minutes)).toBeGreaterThanOrEqual(24 * 60 - 1);
});
