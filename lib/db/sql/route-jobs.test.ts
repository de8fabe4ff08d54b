import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pgliteFactory } from "../../../test/support/harness.ts";
import { ROUTE_TEST_CAPS, routeStatementOptions } from "../../../test/support/route-statement.ts";
import { catalogueByInternal } from "../../webhook/catalogue/webhook-event-catalogue.ts";
import { eventTypeRow } from "../../webhook/catalogue/catalogue-sync.ts";
import { buildEventBody } from "../../webhook/outbound/webhook-event-body.ts";
import { routeMessageSchema } from "../../webhook/outbound/webhook-out-queue-registrations.ts";
import { routeRule } from "../../webhook/outbound/webhook-out-route.handler.ts";
import type { Database } from "../client.ts";
import { webhookEventType } from "../schema.ts";
import { insertDispatches } from "./insert-dispatches.ts";
import { routeAndClaim, type RouteAndClaimOptions } from "./route-and-claim.ts";
import { enqueueRouteJob, routeJobInsert } from "./route-jobs.ts";

let database: Database;

beforeAll(async () => {
  ({ database } = await pgliteFactory());
  await database.db
    .insert(webhookEventType)
    .values(["account.updated", "general.address.created"].map((type) => eventTypeRow(catalogueByInternal(type)!)));
  await database.rows(sql`
    insert into webhook (id, url, events, secret_sealed, created_by)
    values ('wh_all', 'https://example.com/hook', array['*'], 'sealed', 'test')
  `);
});
afterAll(async () => {
  await database?.close();
});

/** Routes due route jobs as worker w1: by default ten at most, claiming none of the new dispatches. */
const routeAll = (options: Partial<RouteAndClaimOptions> = {}) =>
  routeAndClaim(database, routeStatementOptions(options));

const message = (resourceId: string, eventId: string) => ({
  eventId,
  type: "account.updated",
  resourceId,
  occurredAt: "2026-12-03T07:30:00.123Z",
  livemode: false,
});

describe("the route statement's body", () => {
  // Quotes, escapes, C0 controls, DEL, non-ASCII, astral, line separators, markup.
  const ids = [
    'a"b\\c',
    "line\nbreak\ttab\r\b\f",
    "ctl\u0001\u001f\u007f",
    "é ü 中",
    "😀x",
    "ls\u2028ps\u2029",
    "</x>",
  ];
  for (const [i, resourceId] of ids.entries()) {
    it(`is buildEventBody's bytes for the resource id ${JSON.stringify(resourceId)}`, async () => {
      const event = message(resourceId, `evt_body_test_${i}`);
      const entry = catalogueByInternal(event.type)!;
      const [id] = await insertDispatches(database, event, routeRule(entry));
      const [row] = await database.rows<{ payload: string; account: string | null; sequence: number }>(
        sql`select payload, account, sequence::integer as sequence from webhook_dispatch where id = ${id!}`,
      );
      expect(row!.sequence).toBe(i + 1);
      expect(row!.payload).toBe(
        buildEventBody({
          id: event.eventId,
          type: event.type,
          created: event.occurredAt,
          livemode: event.livemode,
          object: entry.resource,
          resourceId,
          account: resourceId,
          sequence: i + 1,
        }),
      );
      expect(row!.account).toBe(resourceId);
    });
  }

  it("routes an ownerless event with account null, once per event", async () => {
    const event = { ...message("addr_1", "evt_body_none_1"), type: "general.address.created" };
    const entry = catalogueByInternal(event.type)!;
    const first = await insertDispatches(database, event, routeRule(entry));
    expect(first).toHaveLength(1);
    expect(await insertDispatches(database, event, routeRule(entry))).toEqual([]);
    const [row] = await database.rows<{ payload: string }>(
      sql`select payload from webhook_dispatch where id = ${first[0]!}`,
    );
    expect(JSON.parse(row!.payload).data).toEqual({ object: entry.resource, id: "addr_1", account: null });
  });
});

describe("the route statement's check of a message", () => {
  const good = message("acc_1", "evt_check_good_0001");
  const samples: unknown[] = [
    good,
    { ...good, eventId: "evt_short" },
    { ...good, eventId: "evt_not ok_12345" },
    { ...good, eventId: "xyz_1234567890" },
    { ...good, eventId: 12 },
    { ...good, resourceId: "" },
    { ...good, resourceId: "x".repeat(200) },
    { ...good, resourceId: "x".repeat(201) },
    { ...good, resourceId: "😀".repeat(100) },
    { ...good, resourceId: "😀".repeat(101) },
    { ...good, resourceId: 7 },
    { ...good, occurredAt: "2026-12-03T07:30:00+01:00" },
    { ...good, occurredAt: "2026-13-03T07:30:00Z" },
    { ...good, occurredAt: "2026-12-03T07:30Z" },
    { ...good, occurredAt: "2026-12-03 07:30:00Z" },
    { ...good, occurredAt: "2026-12-03T07:30:00.123456789Z" },
    { ...good, livemode: "false" },
    { ...good, type: "nobody.knows" },
    { ...good, type: undefined },
    [good],
    "evt_just_a_string",
  ];

  it("routes only what the route message's schema accepts, and leaves the rest leased to the consumer", async () => {
    const routedHere: number[] = [];
    for (const [i, sample] of samples.entries()) {
      await database.rows(sql`delete from webhook_route_job`);
      await database.rows(sql`delete from webhook_dispatch`);
      await enqueueRouteJob(database, sample);
      const routed = await routeAll();
      expect(routed.found, `sample ${i}`).toBe(1);
      const parsed = routeMessageSchema.safeParse(sample);
      const accepted = parsed.success && catalogueByInternal(parsed.data.type) !== undefined;
      if (routed.routed.length === 1) {
        routedHere.push(i);
        // Routed here: the schema accepts it too, and the job is gone.
        expect(accepted, `sample ${i} routed though the schema refuses it`).toBe(true);
        expect(await database.rows(sql`select 1 from webhook_route_job`)).toEqual([]);
      } else {
        // Left to the consumer (which decides): leased to this worker, counted as an attempt.
        expect(
          routed.left.map((job) => job.message),
          `sample ${i}`,
        ).toEqual([sample]);
        const [job] = await database.rows<{ locked_by: string; attempts: number }>(
          sql`select locked_by, attempts from webhook_route_job`,
        );
        expect(job).toEqual({ locked_by: "w1", attempts: 1 });
      }
    }
    // The well-formed ones were routed here (an id of 200 characters is within the schema).
    expect(routedHere).toEqual([0, 6, 15]);
  });
});

describe("the route message's account", () => {
  const accountOf = async (eventId: string) =>
    (
      await database.rows<{ account: string | null }>(
        sql`select account from webhook_dispatch where event_id = ${eventId} and webhook_id = 'wh_all'`,
      )
    )[0]?.account;

  it("is read by the enqueueing statement, so a resource deleted before routing keeps its owner", async () => {
    await database.rows(sql`delete from webhook_route_job`);
    await database.rows(sql`insert into account (id, name) values ('acc_owner', 'Owner') on conflict do nothing`);
    const entry = catalogueByInternal("payment-debt.created")!;
    await database.db.insert(webhookEventType).values(eventTypeRow(entry)).onConflictDoNothing();
    const [debt] = await database.rows<{ id: string }>(
      sql`insert into payment_debt (account, amount, currency) values ('acc_owner', 1, 'usd') returning id`,
    );
    const event = { ...message(debt!.id, "evt_owner_direct_0001"), type: entry.internal };
    const job = await enqueueRouteJob(database, event, { owner: entry.owner });
    expect(job.account).toBe("acc_owner");
    await database.rows(sql`delete from payment_debt where id = ${debt!.id}`);
    expect(await routeAll()).toMatchObject({ found: 1, routed: [1] });
    expect(await accountOf(event.eventId)).toBe("acc_owner");
    // Without it, routing reads the owner now: the resource is gone, so there is none.
    const unowned = { ...event, eventId: "evt_owner_direct_0002" };
    expect((await enqueueRouteJob(database, unowned)).account).toBeNull();
    await routeAll();
    expect(await accountOf(unowned.eventId)).toBeNull();
  });

  it("is read the same way by the publisher's insert, whose SQL is built once per owner strategy", async () => {
    await database.rows(sql`delete from webhook_route_job`);
    await database.rows(sql`insert into account (id, name) values ('acc_owner', 'Owner') on conflict do nothing`);
    const [debt] = await database.rows<{ id: string }>(
      sql`insert into payment_debt (account, amount, currency) values ('acc_owner', 1, 'usd') returning id`,
    );
    const direct = catalogueByInternal("payment-debt.created")!.owner;
    const self = catalogueByInternal("account.updated")!.owner;
    const none = catalogueByInternal("general.address.created")!.owner;
    expect([direct.kind, self.kind, none.kind]).toEqual(["direct", "self", "none"]);
    const published: Array<[string, typeof direct | undefined, string | null]> = [
      [debt!.id, direct, "acc_owner"],
      ["acc_itself", self, "acc_itself"],
      ["ga_1", none, null],
      ["pd_unowned", undefined, null],
    ];
    for (const [i, [resourceId, owner, account]] of published.entries()) {
      const event = message(resourceId, `evt_compiled_${i}`);
      const insert = routeJobInsert(event, owner);
      // Another event of the same strategy: the same statement (text and name), its own values.
      const again = routeJobInsert(message("other", `evt_compiled_${i}_again`), owner);
      expect(again.query.sql).toBe(insert.query.sql);
      expect(again.name).toBe(insert.name);
      expect(again.query.params).not.toEqual(insert.query.params);
      await database.transaction((tx) => tx.beforeCommit(insert.query, insert.name));
      const [job] = await database.rows<{ message: { eventId: string; account?: string | null } }>(
        sql`select message from webhook_route_job where message ->> 'eventId' = ${event.eventId}`,
      );
      expect(job?.message).toMatchObject({ eventId: event.eventId, resourceId });
      // Without a strategy the message has no account at all: routing looks the owner up itself.
      if (owner === undefined) expect(job?.message).not.toHaveProperty("account");
      else expect(job?.message.account).toBe(account);
    }
    const names = new Set(published.map(([, owner]) => routeJobInsert(message("x", "evt_x"), owner).name));
    expect(names.size).toBe(published.length);
  });

  // account.updated's owner is the resource itself: `acc_self` when looked up.
  const cases: Array<[string, unknown, string | null]> = [
    ["a string is used as it is", "acc_given", "acc_given"],
    ["null means no owner", null, null],
    ["absent, the owner is looked up", undefined, "acc_self"],
    ["a number is ignored and the owner looked up", 5, "acc_self"],
    ["an object is ignored and the owner looked up", { id: "acc_given" }, "acc_self"],
  ];
  for (const [i, [title, account, expected]] of cases.entries()) {
    it(`${title}, by the route statement and the shared consumer alike`, async () => {
      const base = message("acc_self", `evt_owner_case_${i}_statement`);
      const sample = account === undefined ? base : { ...base, account };
      await database.rows(sql`delete from webhook_route_job`);
      await enqueueRouteJob(database, sample);
      expect(await routeAll()).toMatchObject({ found: 1, routed: [1] });
      expect(await accountOf(base.eventId)).toBe(expected);

      const parsed = routeMessageSchema.parse({ ...sample, eventId: `evt_owner_case_${i}_consumer` });
      const entry = catalogueByInternal(parsed.type)!;
      await insertDispatches(database, parsed, routeRule(entry));
      expect(await accountOf(parsed.eventId)).toBe(expected);
    });
  }
});

describe("a route statement's batch", () => {
  it("creates the dispatches its events would one by one, and none twice for one event", async () => {
    const deprecated = catalogueByInternal("account.created")!;
    await database.db
      .insert(webhookEventType)
      .values({ ...eventTypeRow(deprecated), deprecated: true })
      .onConflictDoNothing();
    await database.rows(sql`
      insert into webhook (id, url, events, account, secret_sealed, created_by)
      values ('wh_batch_own', 'https://own.example.com/hook', array['account.updated'], 'acc_batch_1', 'sealed', 'test'),
             ('wh_batch_other', 'https://other.example.com/hook', array['account.updated'], 'acc_other', 'sealed', 'test')
    `);
    // Owners given, looked up (the account itself), and none; live and test mode; a body with bytes to escape; a
    // deprecated type; one event whose message arrives twice, and one whose second message names an owner.
    const events = [
      message("acc_batch_1", "evt_batch_0001"),
      { ...message("acc_batch_2", "evt_batch_0002"), account: "acc_batch_1", livemode: true },
      { ...message("acc_batch_3", "evt_batch_0003"), account: null },
      message('q"\\\n\u2028😀', "evt_batch_0004"),
      { ...message("addr_batch", "evt_batch_0005"), type: "general.address.created" },
      { ...message("acc_batch_1", "evt_batch_0006"), type: "account.created" },
      message("acc_batch_1", "evt_batch_0001"),
      message("acc_other", "evt_batch_0007"),
      // The third event again, now with an owner: only its owner's webhook is new.
      { ...message("acc_batch_3", "evt_batch_0003"), account: "acc_batch_1" },
    ];
    const rows = () =>
      database.rows<Record<string, string | null>>(sql`
        select d.event_id, d.event_type, d.webhook_id, d.account, d.payload, d.status, o.next_attempt_at is not null as open
        from webhook_dispatch d left join webhook_dispatch_open o on o.dispatch_id = d.id
        where d.event_id like 'evt_batch_%' order by d.event_id, d.webhook_id
      `);
    try {
      await database.rows(sql`delete from webhook_route_job`);
      for (const event of events) await enqueueRouteJob(database, event);
      // Each job's route shard (its account hashed into 16), as the step reads it.
      const shards = await database.rows<{ id: number; shard: number; event_id: string; account: string | null }>(sql`
        select id::integer as id, hashtext(coalesce(message ->> 'account', '')) & 15 as shard,
          message ->> 'eventId' as event_id, message ->> 'account' as account
        from webhook_route_job order by id
      `);
      const counters = await database.rows<{ webhook_id: string; last: number }>(
        sql`select webhook_id, last::integer as last from webhook_sequence`,
      );
      const routed = await routeAll({ routeLimit: 50 });
      expect(routed).toMatchObject({ found: 9, dispatches: 10, left: [] });
      const batched = await rows();
      expect(batched).toHaveLength(10);
      // The step went through the shards from a random one on, each in publish order. The webhook hearing every
      // event numbered the first job it routed 1 past where it stood: that job's shard is where the step began.
      const [first] = await database.rows<{ event_id: string; account: string | null }>(sql`
        select d.event_id, d.account from webhook_dispatch d
        where d.webhook_id = 'wh_all' and d.event_id like 'evt_batch_%' order by d.sequence limit 1
      `);
      // (A message naming no owner has its owner looked up as it is routed: the dispatch has it, the message not.)
      const start = (shards.find((job) => job.event_id === first!.event_id && job.account === first!.account) ??
        shards.find((job) => job.event_id === first!.event_id))!.shard;
      const order = shards.toSorted(
        (a, b) => ((a.shard - start + 16) % 16) - ((b.shard - start + 16) % 16) || a.id - b.id,
      );

      await database.rows(sql`delete from webhook_dispatch where event_id like 'evt_batch_%'`);
      // The same numbers again: each webhook's stream starts where it stood before the batch.
      await database.rows(sql`delete from webhook_sequence`);
      for (const { webhook_id, last } of counters) {
        await database.rows(sql`insert into webhook_sequence (webhook_id, last) values (${webhook_id}, ${last})`);
      }
      // One by one, in the order the step routed them: the same dispatches, and as many per message.
      const oneByOne = [];
      for (const job of order) {
        const parsed = routeMessageSchema.parse(events[shards.indexOf(job)]);
        oneByOne.push((await insertDispatches(database, parsed, routeRule(catalogueByInternal(parsed.type)!))).length);
      }
      expect(await rows()).toEqual(batched);
      expect(routed.routed).toEqual(oneByOne);
    } finally {
      await database.rows(sql`delete from webhook_dispatch where event_id like 'evt_batch_%'`);
      await database.rows(sql`delete from webhook where id in ('wh_batch_own', 'wh_batch_other')`);
    }
  });
});

describe("a route statement's numbers", () => {
  it("number each of many webhooks' events on from where it stood, in batch order, however many each hears", async () => {
    // 60 webhooks, their ids in an order unlike their creation's; a third hear only account.updated, a third only
    // general.address.created, a third both; every other one already numbered some events (`last` = its index × 7).
    const hooks = Array.from({ length: 60 }, (_, i) => ({
      id: `wh_num_${((i * 37) % 60).toString().padStart(2, "0")}_${i}`,
      events: [["account.updated"], ["general.address.created"], ["account.updated", "general.address.created"]][
        i % 3
      ]!,
      start: i % 2 === 0 ? i * 7 : 0,
    }));
    for (const hook of hooks) {
      await database.rows(sql`
        insert into webhook (id, url, events, secret_sealed, created_by)
        values (${hook.id}, 'https://numbers.example.com/hook', ${`{${hook.events.join(",")}}`}::text[], 'sealed', 'test')
      `);
      if (hook.start > 0) {
        await database.rows(sql`insert into webhook_sequence (webhook_id, last) values (${hook.id}, ${hook.start})`);
      }
    }
    const events = Array.from({ length: 7 }, (_, i) => ({
      ...message("acc_numbers", `evt_num_${i}`),
      type: i % 2 === 0 ? "account.updated" : "general.address.created",
      account: null,
    }));
    const rule = (type: string) => routeRule(catalogueByInternal(type)!);
    // wh_all hears these too: its counter is put back after.
    const [all] = await database.rows<{ last: number }>(
      sql`select coalesce(max(last), 0)::integer as last from webhook_sequence where webhook_id = 'wh_all'`,
    );
    try {
      await database.rows(sql`
        select * from hooklane_route_events(
          ${`{${events.map((e) => JSON.stringify(JSON.stringify(e))).join(",")}}`}::jsonb[],
          ${`{${events.map((e) => JSON.stringify(JSON.stringify(rule(e.type)))).join(",")}}`}::jsonb[])
      `);
      const numbered = await database.rows<{ webhook_id: string; event_id: string; sequence: number; payload: string }>(
        sql`select webhook_id, event_id, sequence::integer as sequence, payload from webhook_dispatch
            where event_id like 'evt_num_%' and webhook_id like 'wh_num_%' order by webhook_id, sequence`,
      );
      const expected = hooks.flatMap((hook) =>
        events
          .filter((e) => hook.events.includes(e.type))
          .map((e, n) => ({ webhook_id: hook.id, event_id: e.eventId, sequence: hook.start + n + 1 })),
      );
      const byKey = (a: { webhook_id: string; sequence: number }, b: { webhook_id: string; sequence: number }) =>
        a.webhook_id < b.webhook_id ? -1 : a.webhook_id > b.webhook_id ? 1 : a.sequence - b.sequence;
      expect(numbered.map(({ webhook_id, event_id, sequence }) => ({ webhook_id, event_id, sequence }))).toEqual(
        expected.toSorted(byKey),
      );
      // The body carries the same number.
      expect(numbered.filter((row) => !row.payload.includes(`"sequence":${row.sequence},`))).toEqual([]);
      const counters = await database.rows<{ webhook_id: string; last: number }>(
        sql`select webhook_id, last::integer as last from webhook_sequence where webhook_id like 'wh_num_%'`,
      );
      expect(new Map(counters.map((c) => [c.webhook_id, c.last]))).toEqual(
        new Map(hooks.map((hook) => [hook.id, hook.start + events.filter((e) => hook.events.includes(e.type)).length])),
      );
    } finally {
      await database.rows(sql`delete from webhook_dispatch where event_id like 'evt_num_%'`);
      await database.rows(sql`delete from webhook_sequence where webhook_id like 'wh_num_%'`);
      await database.rows(sql`update webhook_sequence set last = ${all!.last} where webhook_id = 'wh_all'`);
      await database.rows(sql`delete from webhook where id like 'wh_num_%'`);
    }
  });
});

describe("the lane's step", () => {
  /** Runs `test` with no route job or dispatch waiting and two more webhooks hearing everything (three with wh_all). */
  async function withTwoMoreWebhooks(test: () => Promise<void>): Promise<void> {
    await database.rows(sql`delete from webhook_route_job`);
    await database.rows(sql`delete from webhook_dispatch`);
    await database.rows(sql`
      insert into webhook (id, url, events, secret_sealed, created_by)
      values ('wh_fan_1', 'https://one.example.com/hook', array['*'], 'sealed', 'test'),
             ('wh_fan_2', 'https://two.example.com/hook', array['*'], 'sealed', 'test')
    `);
    try {
      await test();
    } finally {
      await database.rows(sql`delete from webhook_dispatch`);
      await database.rows(sql`delete from webhook_lane_in_flight`);
      await database.rows(sql`delete from webhook where id in ('wh_fan_1', 'wh_fan_2')`);
    }
  }

  it("writes each dispatch once, pending, with its open row due now", () =>
    withTwoMoreWebhooks(async () => {
      await enqueueRouteJob(database, message("acc_1", "evt_written_once"));
      const routed = await routeAll();
      expect(routed).toMatchObject({ found: 1, routed: [3], dispatches: 3, claim: undefined, left: [] });
      const rows = await database.rows<{ status: string; xmin_is_insert: boolean; locked_by: string | null }>(sql`
        select d.status, d.xmin = o.xmin as xmin_is_insert, o.locked_by
        from webhook_dispatch d join webhook_dispatch_open o on o.dispatch_id = d.id
        where d.event_id = 'evt_written_once'
      `);
      expect(rows).toEqual(Array(3).fill({ status: "pending", xmin_is_insert: true, locked_by: null }));
    }));

  it("claims the new dispatches under the caps, each webhook's earliest first", () =>
    withTwoMoreWebhooks(async () => {
      for (const n of [1, 2]) await enqueueRouteJob(database, message("acc_1", `evt_cap_batch_000${n}`));
      const routed = await routeAll({ claimLimit: 10, caps: { ...ROUTE_TEST_CAPS, perWebhook: 1 } });
      // Two events, three webhooks each: one in flight per webhook, the first event's; the rest wait.
      expect(routed).toMatchObject({ found: 2, routed: [3, 3], dispatches: 6 });
      expect(routed.claim!.dispatches.map((d) => `${d.webhookId} ${d.eventId}`).sort()).toEqual([
        "wh_all evt_cap_batch_0001",
        "wh_fan_1 evt_cap_batch_0001",
        "wh_fan_2 evt_cap_batch_0001",
      ]);
      const [waiting] = await database.rows<{ n: number }>(sql`
        select count(*)::int as n from webhook_dispatch d join webhook_dispatch_open o on o.dispatch_id = d.id
        where d.event_id = 'evt_cap_batch_0002' and o.locked_by is null
      `);
      expect(waiting!.n).toBe(3);
    }));
});
