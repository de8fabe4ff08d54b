import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import { postgresReceiptStore, type WebhookEvent } from "../../lib/webhook/verify/webhook-verify.ts";
import { sql } from "drizzle-orm";
import { insertDispatches } from "../../lib/db/sql/insert-dispatches.ts";
import { errorFacts } from "../../lib/log/error-facts.ts";
import { catalogueByInternal } from "../../lib/webhook/catalogue/webhook-event-catalogue.ts";
import { routeRule } from "../../lib/webhook/outbound/webhook-out-route.handler.ts";
import { startHarness, type Driver } from "../support/harness.ts";
import { postgresFactory } from "../support/postgres.ts";
import {
  coverage,
  publish,
  readStream,
  receiveAll,
  sequenceDrill,
  settledDispatches,
  setUpSequence,
  type SequenceSetup,
} from "../support/sequence-drill.ts";

const EVENTS = 1_000;
const DROPPED = 50;

describe.each(["postgres", "vercel"] as Driver[])("sequence numbers on PostgreSQL, %s transport", (driver) => {
  let setup: SequenceSetup | undefined;
  const open: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const close of open.splice(0)) await close();
    await setup?.close();
    setup = undefined;
  });

  it(
    `gives ${EVENTS} events sequences 1..${EVENTS}, each a first receipt exactly once through retries, a pause, a recovery and a resend`,
    { timeout: 300_000 },
    async () => {
      setup = await setUpSequence(postgresFactory, driver);
      const figures = await sequenceDrill(setup, EVENTS);
      console.info(`[sequence] ${driver}: ${JSON.stringify(figures)}`);
      expect(figures.firstReceipts).toBe(EVENTS);
      expect(figures.exhaustedBeforeRecovery).toBeGreaterThan(0);
      expect(figures.duplicatesDropped).toBeGreaterThanOrEqual(EVENTS);
    },
  );

  it(
    `reports the gaps ${DROPPED} lost deliveries leave, fills them from GET /v3/events, and a poller alone sees every event once, in order`,
    { timeout: 300_000 },
    async () => {
      setup = await setUpSequence(postgresFactory, driver, 11);
      const { harness, webhookId } = setup;
      // The poller: a consumer with no endpoint, holding its position and waiting for the next events.
      const polled: WebhookEvent[] = [];
      let after = 0;
      const poller = (async () => {
        for (let request = 0; request < 2_000 && polled.length < EVENTS; request++) {
          const answer = await harness.call("GET", `/v3/events?webhook=${webhookId}&after=${after}&limit=100&wait=5s`, {
            account: "acc_seq",
          });
          expect(answer.status, answer.text).toBe(200);
          for (const event of answer.body.data as WebhookEvent[]) {
            polled.push(event);
            after = event.sequence!;
          }
        }
      })();
      await publish(harness, EVENTS);
      await settledDispatches(setup, (n) => n.success === EVENTS);
      await poller;
      expect(polled.map((event) => event.sequence)).toEqual(Array.from({ length: EVENTS }, (_, i) => i + 1));

      // The subscriber loses DROPPED deliveries after answering 200 (chosen where later events follow them).
      const lost = new Set<number>();
      for (let n = 7; lost.size < DROPPED; n += 13) lost.add(n);
      // The subscriber's own database: a node-postgres pool, as a receiver would hold one.
      const pool = new pg.Pool({ connectionString: harness.hooklane.config.databaseUrl, max: 2 });
      pool.on("error", () => {});
      open.push(() => pool.end());
      const store = postgresReceiptStore(pool, "receipts_drill");
      await store.setup();
      const receipts = await receiveAll(setup, store, (_, event) => lost.has(event.sequence!));
      const reported = new Set(receipts.gaps.flatMap((gap) => range(gap.from, gap.to)));
      expect([...lost].filter((n) => !reported.has(n))).toEqual([]);

      // Each gap, fetched: GET /v3/events after the sequence before it, as many as it spans.
      let fetched = 0;
      for (const gap of receipts.gaps) {
        for (const event of await readStream(setup, gap.from - 1, gap.to)) {
          const { first } = await store.record({ stream: webhookId, id: event.id, sequence: event.sequence });
          if (first) {
            receipts.firsts.push(event.sequence!);
            fetched++;
          }
        }
      }
      expect(coverage(receipts.firsts, EVENTS)).toEqual({ missing: [], twice: [] });
      const bodies = new Map(setup.receiver.posts.map((post) => [JSON.parse(post.body).id, JSON.parse(post.body)]));
      expect(polled.filter((event) => JSON.stringify(event) !== JSON.stringify(bodies.get(event.id)))).toEqual([]);
      console.info(
        `[sequence] ${driver}: ${EVENTS} events, ${DROPPED} lost at the subscriber, ${receipts.gaps.length} gaps reported covering ${reported.size} sequences, ${fetched} filled from GET /v3/events; the poller saw ${polled.length} events in order`,
      );
    },
  );
});

function range(from: number, to: number): number[] {
  return Array.from({ length: to - from + 1 }, (_, i) => from + i);
}

describe("the PostgreSQL receipt store", () => {
  it("makes exactly one of 20 simultaneous deliveries of an event its first receipt", async () => {
    const { databaseUrl, drop, database } = await postgresFactory();
    const pool = new pg.Pool({ connectionString: databaseUrl, max: 20 });
    // Dropping the database ends whatever connection is still closing: not this test's failure.
    pool.on("error", () => {});
    try {
      const store = postgresReceiptStore(pool);
      await store.setup();
      for (let round = 0; round < 5; round++) {
        const answers = await Promise.all(
          Array.from({ length: 20 }, () =>
            store.record({ stream: "wh_race", id: `evt_race_${round}`, sequence: round + 1 }),
          ),
        );
        expect(answers.filter((answer) => answer.first)).toHaveLength(1);
      }
    } finally {
      await pool.end();
      await database.close();
      await drop();
    }
  });
});

describe("numbering while routes run at once", () => {
  it("gives one webhook's events 1..n with no gap when 8 routings run together and each message comes twice", async () => {
    const harness = await startHarness(postgresFactory, { lane: false });
    try {
      await harness.accounts("acc_race");
      const hooks = [];
      for (const path of ["/a", "/b"]) {
        const created = await harness.call("POST", "/v3/webhooks", {
          account: "acc_race",
          body: { url: `http://127.0.0.1:4000${path}`, events: ["account.updated"] },
        });
        expect(created.status, created.text).toBe(201);
        hooks.push(created.body.id as string);
      }
      const rule = routeRule(catalogueByInternal("account.updated")!);
      const messages = Array.from({ length: 300 }, (_, i) => ({
        eventId: `evt_race_${String(i).padStart(4, "0")}`,
        type: "account.updated",
        resourceId: "acc_race",
        occurredAt: new Date().toISOString(),
        livemode: false,
        account: "acc_race",
      }));
      // Every message twice, the two copies in different routings at the same moment.
      const work = [...messages, ...messages.toReversed()];
      // Two copies routed at the same moment: the later one fails on the event's key, its numbers with it, and is
      // routed again, as a transport routes a message again, finding its dispatches made.
      let next = 0;
      let collisions = 0;
      await Promise.all(
        Array.from({ length: 8 }, async () => {
          while (next < work.length) {
            const message = work[next++]!;
            for (let attempt = 1; ; attempt++) {
              try {
                await insertDispatches(harness.hooklane.database, message, rule);
                break;
              } catch (error) {
                if (errorFacts(error).code !== "23505" || attempt === 5) throw error;
                collisions++;
              }
            }
          }
        }),
      );
      console.info(`[sequence] 600 routings of 300 events by 8 at once: ${collisions} collided and were routed again`);
      for (const hook of hooks) {
        const rows = await harness.hooklane.database.rows<{ sequence: number }>(
          sql`select sequence::integer as sequence from webhook_dispatch where webhook_id = ${hook}`,
        );
        expect(
          coverage(
            rows.map((row) => row.sequence),
            300,
          ),
        ).toEqual({ missing: [], twice: [] });
        const [counter] = await harness.hooklane.database.rows<{ last: number }>(
          sql`select last::integer as last from webhook_sequence where webhook_id = ${hook}`,
        );
        expect(counter!.last).toBe(300);
      }
    } finally {
      await harness.close();
    }
  });
});
