import { sql } from "drizzle-orm";
import pg from "pg";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { Database } from "../../lib/db/client.ts";
import { claimDispatches, forgetStoppedWorkers, type InFlightCaps } from "../../lib/db/sql/claim-dispatches.ts";
import { recordAttempts } from "../../lib/db/sql/record-attempts.ts";
import { BREAKER } from "../../lib/webhook/outbound/webhook-retry-policy.ts";
import { openDatabase } from "../../lib/db/client.ts";
import { createTestDatabase } from "../support/postgres.ts";

/**
 * Claims of different workers, on real PostgreSQL: they wait for each other
 * only where they take from the same webhook, origin or account, and the
 * caps hold however many claim at once.
 */
describe("the lane's claims", () => {
  let database: Database;
  let url: string;
  let drop: () => Promise<void>;

  beforeAll(async () => {
    const created = await createTestDatabase();
    ({ url, drop } = created);
    database = await openDatabase({ databaseUrl: url, poolMax: 20 });
  });
  afterAll(async () => {
    await database?.close();
    await drop?.();
  });
  beforeEach(async () => {
    await database.rows(sql`delete from webhook`);
    await database.rows(sql`delete from webhook_lane_in_flight`);
  });

  /** A webhook at `url` owned by `account`, with `count` due dispatches. */
  async function webhookWithDue(id: string, account: string, url: string, count: number): Promise<string> {
    await database.rows(sql`
      insert into webhook (id, account, url, events, secret_sealed, created_by)
      values (${id}, ${account}, ${url}, array['*'], 'sealed', 'test')
    `);
    await database.rows(sql`
      with made as (
        insert into webhook_dispatch (event_id, event_type, webhook_id, account, payload)
        select 'evt_' || ${id} || '_' || n, 'payment-debt.created', ${id}, ${account}, '{}'
        from generate_series(1, ${count}) n
        returning id, webhook_id, next_attempt_at
      )
      insert into webhook_dispatch_open (dispatch_id, webhook_id, next_attempt_at)
      select id, webhook_id, next_attempt_at from made
    `);
    return id;
  }

  const caps: InFlightCaps = { perWebhook: 16, perOrigin: 32, perAccount: 100 };

  it("never wait for a claim on another webhook, origin and account: one held open on X, one on Y returns at once", async () => {
    await webhookWithDue("wh_x", "acc_x", "https://x.example.com/hook", 5);
    await webhookWithDue("wh_y", "acc_y", "https://y.example.com/hook", 5);
    const [xDispatch] = await database.rows<{ id: string }>(
      sql`select dispatch_id as id from webhook_dispatch_open where webhook_id = 'wh_x' limit 1`,
    );
    // Claim 1, on its own connection, takes webhook X's, origin X's and account X's locks, and stays open.
    const holder = new pg.Client({ connectionString: url, application_name: "claim-held-open" });
    await holder.connect();
    try {
      await holder.query("begin");
      const held = await holder.query(
        `select hooklane_claim_dispatches('w1', 1, 60000, '', $1, 16, 32, 100, 64, 250, '{}'::jsonb)::text as claim`,
        [xDispatch!.id],
      );
      expect(JSON.parse(held.rows[0].claim).groups[0].rows).toHaveLength(1);

      // Claim 2 (another worker, the lane's walk) returns Y's due rows while claim 1 is open. It would hang here if
      // it waited for claim 1: nothing ends claim 1 until this resolves.
      const claimed = await Promise.race([
        claimDispatches(database, { workerId: "w2", limit: 10, leaseMs: 60_000, caps }),
        new Promise<never>((_, reject) => setTimeout(() => reject(new Error("claim 2 waited for claim 1")), 10_000)),
      ]);
      expect(claimed.dispatches.map((d) => d.webhookId)).toEqual(Array(5).fill("wh_y"));
      // X it passed over, and says so: another claim held it at that moment.
      expect(claimed.contended).toBe(true);
      // Nothing waited on a lock meanwhile.
      const waiting = await database.rows<{ n: number }>(sql`
        select count(*)::int as n from pg_stat_activity
        where datname = current_database() and wait_event_type = 'Lock'
      `);
      expect(waiting[0]!.n).toBe(0);

      // A claim of one named dispatch of X (a Vercel invocation's) waits for claim 1 instead, on X's lock alone.
      const [another] = await database.rows<{ id: string }>(sql`
        select dispatch_id as id from webhook_dispatch_open where webhook_id = 'wh_x' and dispatch_id <> ${xDispatch!.id}
        limit 1
      `);
      const named = claimDispatches(database, {
        workerId: "w3",
        limit: 1,
        leaseMs: 60_000,
        caps,
        onlyId: another!.id,
      });
      const blocked = await waitFor(async () => {
        const rows = await database.rows<{ wait_event: string }>(sql`
          select wait_event from pg_stat_activity
          where datname = current_database() and wait_event_type = 'Lock' and query like '%hooklane_claim_dispatches%'
        `);
        return rows.length > 0 ? rows[0]!.wait_event : undefined;
      });
      expect(blocked).toBe("advisory");
      await holder.query("commit");
      expect((await named).dispatches.map((d) => d.id)).toEqual([another!.id]);
    } finally {
      await holder.end();
    }
  });

  it("hold a webhook to its cap, and an origin and an account to theirs, however many workers claim at once", async () => {
    // Two webhooks on one origin and one account, a third on another origin of that account, a fourth elsewhere.
    await webhookWithDue("wh_a1", "acc_a", "https://a.example.com/one", 40);
    await webhookWithDue("wh_a2", "acc_a", "https://a.example.com/two", 40);
    await webhookWithDue("wh_a3", "acc_a", "https://a3.example.com/hook", 40);
    await webhookWithDue("wh_b", "acc_b", "https://b.example.com/hook", 40);
    const tight: InFlightCaps = { perWebhook: 3, perOrigin: 5, perAccount: 7 };
    const origin = (webhookId: string) => (webhookId === "wh_a1" || webhookId === "wh_a2" ? "a" : webhookId);
    const account = (webhookId: string) => (webhookId === "wh_b" ? "acc_b" : "acc_a");

    // Eight workers, each claiming, holding what it took for a moment, recording it and claiming again, all at once.
    const running = new Map<string, Map<string, number>>();
    let peak = { webhook: 0, origin: 0, account: 0 };
    const observe = () => {
      const all = [...running.values()].flatMap((held) => [...held.entries()]);
      const sum = (key: (id: string) => string) => {
        const totals = new Map<string, number>();
        for (const [id, n] of all) totals.set(key(id), (totals.get(key(id)) ?? 0) + n);
        return Math.max(0, ...totals.values());
      };
      peak = {
        webhook: Math.max(
          peak.webhook,
          sum((id) => id),
        ),
        origin: Math.max(peak.origin, sum(origin)),
        account: Math.max(peak.account, sum(account)),
      };
    };
    let delivered = 0;
    const worker = async (workerId: string) => {
      const held = new Map<string, number>();
      running.set(workerId, held);
      const until = Date.now() + 60_000;
      while (delivered < 160 && Date.now() < until) {
        const claim = await claimDispatches(database, {
          workerId,
          limit: 10,
          leaseMs: 60_000,
          caps: tight,
          held: Object.fromEntries(held),
        });
        for (const d of claim.dispatches) held.set(d.webhookId, (held.get(d.webhookId) ?? 0) + 1);
        observe();
        if (claim.dispatches.length === 0) {
          await new Promise((resolve) => setTimeout(resolve, 2));
          continue;
        }
        await new Promise((resolve) => setTimeout(resolve, Math.random() * 10));
        // The attempts are over: out of `held` (the next claim says so), then recorded.
        for (const d of claim.dispatches) held.set(d.webhookId, held.get(d.webhookId)! - 1);
        await recordAttempts(
          database,
          workerId,
          claim.dispatches.map((d) => ({
            dispatchId: d.id,
            webhookId: d.webhookId,
            attempt: d.attempt,
            status: "success",
            retryInMs: null,
            startedAt: new Date(),
            durationMs: 1,
            outcome: "success",
            statusCode: 200,
            errorClass: null,
            errorMessage: null,
            responseExcerpt: null,
            signature: { timestamp: 0, scheme: "hooklane-v1", signatures: 1 },
            probe: false,
            test: false,
          })),
          {
            threshold: BREAKER.threshold,
            openBaseMs: 5_000,
            openMaxMs: 300_000,
            connectionClasses: BREAKER.connectionClasses,
          },
        );
        delivered += claim.dispatches.length;
      }
    };
    await Promise.all(Array.from({ length: 8 }, (_, i) => worker(`w${i}`)));

    expect(delivered).toBe(160);
    expect(peak.webhook).toBeLessThanOrEqual(3);
    expect(peak.origin).toBeLessThanOrEqual(5);
    expect(peak.account).toBeLessThanOrEqual(7);
    // And the caps were pressed, not merely respected by a lane that never got near them.
    expect(peak.webhook).toBe(3);
    expect(peak.origin).toBeGreaterThanOrEqual(4);
    expect(peak.account).toBeGreaterThanOrEqual(5);
  });

  it("walk past their first sixteen webhooks, in growing reads, and wrap round from where the last one stopped", async () => {
    // 70 webhooks with one due row each, every one on an origin and an account of its own: only the walk limits.
    const ids: string[] = [];
    for (let i = 0; i < 70; i++) {
      const id = `wh_walk_${String(i).padStart(2, "0")}`;
      ids.push(await webhookWithDue(id, `acc_walk_${i}`, `https://walk-${i}.example.com/hook`, 1));
    }
    const claim = (after: string, limit: number) =>
      claimDispatches(database, { workerId: "walker", limit, leaseMs: 60_000, caps, after });

    // Starting after the 10th: the 11th to the 70th (reads of 16, 16, 32 webhooks), then round to the 1st…
    const first = await claim(ids[9]!, 65);
    expect(first.dispatches.map((d) => d.webhookId)).toEqual([...ids.slice(10), ...ids.slice(0, 5)]);
    expect(first.cursor).toBe(ids[4]);
    // …and the next claim goes on from there, wrapping once and stopping where it began.
    const second = await claim(first.cursor, 100);
    expect(second.dispatches.map((d) => d.webhookId)).toEqual(ids.slice(5, 10));
    const third = await claim(second.cursor, 100);
    expect(third.dispatches).toEqual([]);
  });

  it("forget a worker's book row once it stopped counting a minute ago, and no other", async () => {
    await database.rows(sql`
      insert into webhook_lane_in_flight (worker, until, by_webhook, by_origin, by_account) values
        ('stopped', now() - interval '61 seconds', '{"wh_1": 1}', '{"o": 1}', '{"a": 1}'),
        ('just-stopped', now() - interval '1 second', '{"wh_1": 1}', '{"o": 1}', '{"a": 1}'),
        ('running', now() + interval '10 seconds', '{"wh_1": 1}', '{"o": 1}', '{"a": 1}')
    `);
    await forgetStoppedWorkers(database);
    const left = await database.rows<{ worker: string }>(
      sql`select worker from webhook_lane_in_flight order by worker`,
    );
    expect(left.map((row) => row.worker)).toEqual(["just-stopped", "running"]);
  });
});

/** Polls `probe` every 20 ms until it returns a value, for 10 s at most. */
async function waitFor<T>(probe: () => Promise<T | undefined>): Promise<T> {
  for (let i = 0; i < 500; i++) {
    const value = await probe();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error("waited 10 s in vain");
}
