import { count, sql } from "drizzle-orm";
import { afterEach, describe, expect, it } from "vitest";
import { webhookPoisonMessage, webhookRouteJob } from "../../lib/db/schema.ts";
import { ROUTE_WAKE_CHANNEL } from "../../lib/db/sql/route-jobs.ts";
import { ROUTE_TOPIC } from "../../lib/webhook/outbound/webhook-out-queue-registrations.ts";
import { eventually } from "../support/eventually.ts";
import { pgliteFactory, startHarness } from "../support/harness.ts";
import { startReceiver } from "../support/receiver.ts";

const ADMIN = { account: "acc_ops", admin: true };
const valid = {
  eventId: "evt_poisonous_00001",
  type: "account.created",
  resourceId: "acc_x",
  occurredAt: "2026-01-01T00:00:00.000Z",
  livemode: true,
};

// Every way a route message can be wrong: not an object, wrong types, missing
// or extra-long fields, events the catalogue does not know, and a valid message
// smuggled inside a JSON string (it must not be routed either).
const SHAPES: ReadonlyArray<(i: number) => unknown> = [
  () => null,
  (i) => i,
  () => 1.5,
  () => true,
  () => "",
  (i) => `not a message ${i}`,
  () => JSON.stringify(valid),
  () => [],
  (i) => [valid, i],
  () => ({}),
  (i) => ({ ...valid, eventId: i }),
  () => ({ ...valid, eventId: "evt_!" }),
  () => ({ ...valid, eventId: null }),
  () => ({ ...valid, type: null }),
  () => ({ ...valid, type: "" }),
  () => ({ ...valid, type: "x".repeat(201) }),
  (i) => ({ ...valid, type: `no.such.event.${i}` }),
  () => ({ ...valid, type: "constructor" }),
  () => ({ ...valid, type: "__proto__" }),
  () => ({ ...valid, resourceId: {} }),
  () => ({ ...valid, resourceId: "" }),
  () => ({ ...valid, occurredAt: "yesterday" }),
  (i) => ({ ...valid, occurredAt: i }),
  () => ({ ...valid, livemode: "true" }),
  () => ({ ...valid, livemode: undefined }),
  () => ({ eventId: valid.eventId }),
  () => ({ message: valid }),
  () => ({ ...valid, eventId: `evt_${"a".repeat(65)}` }),
  (i) => JSON.parse(`${"[".repeat(64)}${i}${"]".repeat(64)}`),
];

describe("poison route messages", () => {
  const open: Array<{ close(): Promise<void> }> = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((thing) => thing.close()));
  });

  it(
    "records and acknowledges 1,000 malformed messages, keeps the lane up, and delivers every valid event among them",
    { timeout: 120_000 },
    async () => {
      const receiver = await startReceiver();
      const harness = await startHarness(pgliteFactory);
      open.push(harness, receiver);
      const { database } = harness.hooklane;
      const subscribed = await harness.call("POST", "/v3/webhooks", {
        ...ADMIN,
        body: { url: `${receiver.url}/hook`, events: ["*"], scope: "global" },
      });
      expect(subscribed.status).toBe(201);

      const rounds = 50;
      const perRound = 20;
      for (let round = 0; round < rounds; round++) {
        const batch = Array.from({ length: perRound }, (_, k) => {
          const i = round * perRound + k;
          return SHAPES[i % SHAPES.length]!(i);
        });
        await database.rows(sql`
        with jobs as (
          insert into webhook_route_job (message)
          select value from jsonb_array_elements(${JSON.stringify(batch)}::jsonb)
          returning id
        )
        select pg_notify(${ROUTE_WAKE_CHANNEL}, '') from (select 1 from jobs limit 1) woke
      `);
        const created = await harness.call("POST", "/v3/accounts", {
          ...ADMIN,
          body: { id: `acc_${round}`, name: `Valid ${round}` },
        });
        expect(created.status).toBe(201);
      }
      await harness.settled();

      const posts = await receiver.waitFor(rounds, { timeoutMs: 60_000 });
      const [poisoned, pending] = await eventually(
        () =>
          Promise.all([
            database.db.select({ n: count() }).from(webhookPoisonMessage),
            database.db.select({ n: count() }).from(webhookRouteJob),
          ]),
        ([poison, jobs]) => poison[0]!.n === rounds * perRound && jobs[0]!.n === 0,
        { timeoutMs: 60_000 },
      );
      expect([poisoned[0]!.n, pending[0]!.n]).toEqual([1_000, 0]);
      expect(
        posts
          .map((post) => JSON.parse(post.body).data.id)
          .sort()
          .join(),
      ).toBe(
        Array.from({ length: rounds }, (_, round) => `acc_${round}`)
          .sort()
          .join(),
      );

      const records = await database.db.select().from(webhookPoisonMessage);
      expect(records.every((record) => record.topic === ROUTE_TOPIC && record.error.length > 0)).toBe(true);
      expect(records.filter((record) => record.error.startsWith("unknown event type")).length).toBeGreaterThan(0);

      // Still running: the next event goes through like the first.
      await harness.call("POST", "/v3/accounts", { ...ADMIN, body: { id: "acc_after", name: "After" } });
      const after = await receiver.waitFor(rounds + 1);
      expect(JSON.parse(after.at(-1)!.body).data.id).toBe("acc_after");
      expect(receiver.posts.length).toBe(rounds + 1);
    },
  );
});
