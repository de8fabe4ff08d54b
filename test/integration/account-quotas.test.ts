import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDatabase } from "../../lib/db/client.ts";
import { webhook } from "../../lib/db/schema.ts";
import { lockQuota } from "../../lib/db/sql/account-usage.ts";
import { eventually } from "../support/eventually.ts";
import { HARNESS_START_MS, startHarness, type Harness, type HarnessAnswer } from "../support/harness.ts";
import { createTestDatabase } from "../support/postgres.ts";

const WEBHOOKS = 500;
const TEST_EVENTS = 100;
const RECOVERIES = 3;

/** Bursts against each quota on a real server: every one holds exactly, whatever the concurrency. */
describe("per-account quotas under bursts, on PostgreSQL", () => {
  let drop: () => Promise<void>;
  let harness: Harness;
  /** A second API process on the same database: its requests take turns with the first's only through the database. */
  let other: Harness;

  beforeAll(async () => {
    const created = await createTestDatabase();
    drop = created.drop;
    const start = () =>
      startHarness(
        async () => ({
          database: await openDatabase({ databaseUrl: created.url }),
          databaseUrl: created.url,
          drop: async () => {},
        }),
        {
          // No lane: nothing is delivered and no sweeper completes a recovery mid-burst.
          lane: false,
          env: {
            WEBHOOK_QUOTA_WEBHOOKS: String(WEBHOOKS),
            WEBHOOK_QUOTA_TEST_EVENTS: String(TEST_EVENTS),
            WEBHOOK_QUOTA_RECOVERIES: String(RECOVERIES),
          },
        },
      );
    harness = await start();
    other = await start();
  }, 2 * HARNESS_START_MS);
  afterAll(async () => {
    await other?.close();
    await harness?.close();
    await drop?.();
  });

  const burst = (n: number, send: (i: number) => Promise<HarnessAnswer>) =>
    Promise.all(Array.from({ length: n }, (_, i) => send(i)));
  const statuses = (answers: HarnessAnswer[]) => {
    const counted: Record<number, number> = {};
    for (const answer of answers) counted[answer.status] = (counted[answer.status] ?? 0) + 1;
    return counted;
  };
  const expectRefusals = (answers: HarnessAnswer[], quota: string, limit: number) => {
    for (const answer of answers.filter((a) => a.status === 429)) {
      expect(Number(answer.headers.get("retry-after"))).toBeGreaterThan(0);
      expect(answer.body).toMatchObject({ code: "rate_limited", quota, limit });
    }
  };
  const subscribe = (account: string, path: string) =>
    harness.call("POST", "/v3/webhooks", { account, body: { url: `http://127.0.0.1:4000/${path}`, events: ["*"] } });
  /** `n` webhooks of `account` written straight to the table, as if created earlier. */
  const seedWebhooks = (account: string, n: number) =>
    harness.hooklane.database.db.insert(webhook).values(
      Array.from({ length: n }, (_, i) => ({
        account,
        url: `http://127.0.0.1:4000/seed/${i}`,
        events: ["*"],
        secretSealed: "sealed",
        createdBy: "seed",
      })),
    );
  const count = async (query: ReturnType<typeof sql>) =>
    (await harness.hooklane.database.rows<{ n: number }>(query))[0]!.n;
  const liveWebhooks = (account: string) =>
    count(sql`select count(*)::int as n from webhook where account = ${account} and deleted_at is null`);

  it("300 parallel test sends against a quota of 100: exactly 100 accepted, the rest 429 with Retry-After", async () => {
    await harness.accounts("acc_tests");
    const hook = await subscribe("acc_tests", "tests");
    expect(hook.status).toBe(201);
    const answers = await burst(3 * TEST_EVENTS, (i) =>
      (i % 2 ? other : harness).call("POST", `/v3/webhooks/${hook.body.id}/test`, { account: "acc_tests" }),
    );
    expect(statuses(answers)).toEqual({ 202: TEST_EVENTS, 429: 2 * TEST_EVENTS });
    expectRefusals(answers, "test-events", TEST_EVENTS);
    for (const refused of answers.filter((a) => a.status === 429)) {
      expect(Number(refused.headers.get("retry-after"))).toBeLessThanOrEqual(3_600);
    }
    expect(
      await count(sql`select count(*)::int as n from webhook_dispatch where event_type = 'webhook.test'
        and webhook_id = ${hook.body.id}`),
    ).toBe(TEST_EVENTS);
  });

  it("600 parallel creates with 450 of 500 webhooks taken: exactly 50 accepted; a deletion frees a slot", async () => {
    await harness.accounts("acc_hooks");
    await seedWebhooks("acc_hooks", 450);
    const answers = await burst(600, (i) =>
      (i % 2 ? other : harness).call("POST", "/v3/webhooks", {
        account: "acc_hooks",
        body: { url: `http://127.0.0.1:4000/burst/${i}`, events: ["*"] },
      }),
    );
    expect(statuses(answers)).toEqual({ 201: 50, 429: 550 });
    expectRefusals(answers, "webhooks", WEBHOOKS);
    expect(await liveWebhooks("acc_hooks")).toBe(WEBHOOKS);

    const created = answers.find((a) => a.status === 201)!;
    expect((await subscribe("acc_hooks", "full")).status).toBe(429);
    expect((await harness.call("DELETE", `/v3/webhooks/${created.body.id}`, { account: "acc_hooks" })).status).toBe(
      200,
    );
    expect((await subscribe("acc_hooks", "freed")).status).toBe(201);
    expect((await subscribe("acc_hooks", "full-again")).status).toBe(429);
    expect(await liveWebhooks("acc_hooks")).toBe(WEBHOOKS);
  });

  it("40 parallel recoveries against a quota of 3: exactly 3 running, and resends counted apart, exactly 3", async () => {
    await harness.accounts("acc_recover");
    const hook = await subscribe("acc_recover", "recover");
    const since = new Date(Date.now() - 3_600_000).toISOString();
    const recoveries = await burst(40, (i) =>
      (i % 2 ? other : harness).call("POST", `/v3/webhooks/${hook.body.id}/recover`, {
        account: "acc_recover",
        body: { since },
      }),
    );
    expect(statuses(recoveries)).toEqual({ 202: RECOVERIES, 429: 40 - RECOVERIES });
    expectRefusals(recoveries, "recoveries", RECOVERIES);
    const resends = await burst(40, (i) =>
      (i % 2 ? other : harness).call("POST", "/v3/webhook-resends", {
        account: "acc_recover",
        body: { eventType: "payment-debt.created", since },
      }),
    );
    expect(statuses(resends)).toEqual({ 202: RECOVERIES, 429: 40 - RECOVERIES });
    expectRefusals(resends, "recoveries", RECOVERIES);
    const open = await harness.hooklane.database.rows<{ kind: string; n: number }>(
      sql`select kind, count(*)::int as n from webhook_recovery where status <> 'completed' group by kind order by kind`,
    );
    expect(open).toEqual([
      { kind: "recover", n: RECOVERIES },
      { kind: "resend", n: RECOVERIES },
    ]);
  });

  it("a create that fails after taking the lock rolls back and leaves its slot to the next", async () => {
    await harness.accounts("acc_fail");
    await seedWebhooks("acc_fail", WEBHOOKS - 10);
    // A failure past the count: the insert itself is refused, for these URLs only.
    await harness.hooklane.database.rows(sql`
      create function explode() returns trigger language plpgsql as $$
        begin raise exception 'refused for the test'; end $$;
      create trigger explode before insert on webhook for each row
        when (new.url like '%/explode/%') execute function explode()`);
    try {
      const answers = await burst(60, (i) => subscribe("acc_fail", i % 2 ? `explode/${i}` : `good/${i}`));
      const good = answers.filter((_, i) => i % 2 === 0);
      const failing = answers.filter((_, i) => i % 2 === 1);
      expect(statuses(good)).toEqual({ 201: 10, 429: 20 });
      // Each 500 had the lock and room, and took no slot.
      expect(statuses(failing)[500]).toBeGreaterThan(0);
      expect(statuses(failing)[500]! + (statuses(failing)[429] ?? 0)).toBe(30);
      expect(await liveWebhooks("acc_fail")).toBe(WEBHOOKS);
    } finally {
      await harness.hooklane.database.rows(sql`drop trigger explode on webhook; drop function explode()`);
    }
  });

  // In a request's own transaction (an Idempotency-Key) the lock lasts until that commits; mixed with requests
  // outside one, more than the pool, they take turns without either kind holding up the other for good.
  it.each([
    { kind: "in their own transaction", account: "acc_keys", keyed: () => true },
    { kind: "in and outside their own transaction, mixed", account: "acc_mixed", keyed: (i: number) => i % 2 === 1 },
  ])("60 parallel creates $kind against 20 free slots: exactly 20 accepted", async ({ account, keyed }) => {
    await harness.accounts(account);
    await seedWebhooks(account, WEBHOOKS - 20);
    const answers = await burst(60, (i) =>
      harness.call("POST", "/v3/webhooks", {
        account,
        headers: keyed(i) ? { "idempotency-key": `quota-${i}` } : {},
        body: { url: `http://127.0.0.1:4000/keyed/${i}`, events: ["*"] },
      }),
    );
    expect(statuses(answers)).toEqual({ 201: 20, 429: 40 });
    expect(await liveWebhooks(account)).toBe(WEBHOOKS);
  });

  it("another account's burst passes while one account's lock is held and 30 of its requests wait", async () => {
    await harness.accounts("acc_waits", "acc_free");
    // Holder and probes on a pool of their own: the app's may be full of waiters, which is the failure looked for.
    const observer = await openDatabase({ databaseUrl: harness.hooklane.config.databaseUrl, schema: "as-is" });
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let locked!: () => void;
    const held = new Promise<void>((resolve) => (locked = resolve));
    // What a request of acc_waits holds between its count and its commit, held on purpose.
    const holder = observer.transaction(async (tx) => {
      await lockQuota(tx, "acc_waits", "webhooks");
      locked();
      await released;
    });
    await held;
    const advisoryWaiters = async () =>
      (
        await observer.rows<{ n: number }>(sql`select count(*)::int as n from pg_stat_activity
          where datname = current_database() and wait_event_type = 'Lock' and wait_event = 'advisory'`)
      )[0]!.n;
    // Three times the pool: were each to wait on a connection of its own, nobody else would get one.
    let waitingDone = false;
    const waiting = burst(30, (i) => subscribe("acc_waits", `waits/${i}`)).then((answers) => {
      waitingDone = true;
      return answers;
    });
    let free: HarnessAnswer[] | undefined;
    try {
      await eventually(advisoryWaiters, (n) => n > 0);
      void burst(30, (i) => subscribe("acc_free", `free/${i}`)).then((answers) => (free = answers));
      await eventually(
        async () => free,
        (answers) => answers !== undefined,
      );
      expect(statuses(free!)).toEqual({ 201: 30 });
      expect(waitingDone).toBe(false);
      // This process's requests of acc_waits wait their turn on one connection.
      expect(await advisoryWaiters()).toBe(1);
    } finally {
      release();
      await holder;
      await observer.close();
    }
    expect(statuses(await waiting)).toEqual({ 201: 30 });
  });
});
