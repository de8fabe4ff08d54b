import { sql, type SQL } from "drizzle-orm";
import { PgDialect } from "drizzle-orm/pg-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { eventually } from "../../../../test/support/eventually.ts";
import { startHarness, pgliteFactory, type Harness } from "../../../../test/support/harness.ts";
import { deliverDeps } from "../../../create-hooklane.ts";
import { webhookDispatch } from "../../../db/schema.ts";
import type { DeliveryOutcome } from "../../outbound/webhook-delivery-outcome.ts";
import type { HttpSender } from "../../outbound/webhook-http-sender.ts";
import { openDispatches } from "../../../../test/support/open-dispatches.ts";
import { startLaneLoop } from "./lane-loop.ts";
import type { PostgresTransport } from "./postgres-transport.ts";

let harness: Harness;

beforeAll(async () => {
  harness = await startHarness(pgliteFactory, { lane: false });
  await harness.accounts("acc_alice");
});
afterAll(async () => {
  await harness?.close();
});

/** Resolves when told to. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

/** A webhook of acc_alice's at `path` and `count` due dispatches of it, named `evt_<tag>_<n>`. */
async function webhookWithDispatches(path: string, tag: string, count: number): Promise<string> {
  const created = await harness.call("POST", "/v3/webhooks", {
    account: "acc_alice",
    body: { url: `http://127.0.0.1:8080/${path}`, events: ["payment-debt.created"] },
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const webhookId = created.body.id as string;
  await harness.hooklane.database.db.insert(webhookDispatch).values(
    Array.from({ length: count }, (_, i) => ({
      eventId: `evt_${tag}_${i + 1}`,
      eventType: "payment-debt.created",
      webhookId,
      payload: "{}",
    })),
  );
  await openDispatches(harness.hooklane.database);
  return webhookId;
}

/** A lane loop of the harness's worker, POSTing through `sender`, ten at a time. */
function laneLoop(workerId: string, sender: HttpSender, running: () => boolean) {
  return startLaneLoop(laneLoopOptions(workerId, sender, running));
}

function laneLoopOptions(workerId: string, sender: HttpSender, running: () => boolean) {
  const { hooklane } = harness;
  return {
    database: hooklane.database,
    transport: hooklane.transport as PostgresTransport,
    logger: hooklane.logger,
    deliver: deliverDeps(hooklane, sender),
    breaker: hooklane.config.breaker,
    workerId,
    batchSize: 10,
    concurrency: 10,
    leaseMs: 60_000,
    routeLeaseMs: 60_000,
    caps: hooklane.config.caps,
    maxIdleMs: 50,
    running,
  };
}

/** The database, with every lane step's `held` (the statement's last value) written down. */
function recordingSteps(database: Harness["hooklane"]["database"]) {
  const dialect = new PgDialect();
  const held: Record<string, number>[] = [];
  const spied = Object.create(database) as typeof database;
  spied.rows = ((query: SQL, name?: string) => {
    if (name === "hooklane_route_and_claim") held.push(JSON.parse(dialect.sqlToQuery(query).params.at(-1) as string));
    return database.rows(query, name);
  }) as typeof database.rows;
  return { database: spied, held };
}

it("steps one at a time, each with what the steps before it handed over in `held`", async () => {
  const { hooklane } = harness;
  const webhookId = await webhookWithDispatches("held", "loop_turns", 1);
  // A subscriber that answers once told to: the attempt stays in flight until then.
  const answer = gate();
  const posted = gate();
  const sender: HttpSender = {
    post: async (): Promise<DeliveryOutcome> => {
      posted.open();
      await answer.opened;
      return { kind: "success", statusCode: 200, responseExcerpt: null };
    },
    options: () => Promise.reject(new Error("no consent requests here")),
    close: async () => {},
  };
  const steps = recordingSteps(hooklane.database);
  let running = true;
  const loop = startLaneLoop({ ...laneLoopOptions("w-turns", sender, () => running), database: steps.database });
  await posted.opened;
  // The next steps (its idle wake-ups) count the attempt in flight.
  await eventually(
    async () => steps.held.length,
    (n) => n >= 2,
  );
  expect(steps.held[0]).toEqual({});
  expect(steps.held.slice(1)).toContainEqual({ [webhookId]: 1 });
  // The book says so too, for every other worker's claims.
  const [book] = await hooklane.database.rows<{ by_webhook: Record<string, number> }>(
    sql`select by_webhook from webhook_lane_in_flight where worker = 'w-turns'`,
  );
  expect(book!.by_webhook).toEqual({ [webhookId]: 1 });
  answer.open();
  running = false;
  (hooklane.transport as PostgresTransport).signal.wake();
  await loop.drain();
  expect(loop.inFlight).toBe(0);
});

it("records attempts that finish together in one statement, however many finish first", async () => {
  const { hooklane } = harness;
  const webhookId = await webhookWithDispatches("together", "loop_together", 5);
  // Five POSTs held until all five are out, then answered at once.
  const answer = gate();
  const allPosted = gate();
  let posts = 0;
  const sender: HttpSender = {
    post: async (): Promise<DeliveryOutcome> => {
      if (++posts === 5) allPosted.open();
      await answer.opened;
      return { kind: "success", statusCode: 200, responseExcerpt: null };
    },
    options: () => Promise.reject(new Error("no consent requests here")),
    close: async () => {},
  };
  let running = true;
  const loop = laneLoop("w-together", sender, () => running);
  await allPosted.opened;
  answer.open();
  await eventually(
    async () => {
      const [row] = await hooklane.database.rows<{ n: number }>(sql`
        select count(*)::int as n from webhook_dispatch where webhook_id = ${webhookId} and status = 'success'
      `);
      return row!.n;
    },
    (n) => n === 5,
  );
  running = false;
  await loop.drain();
  // One statement, one transaction (now() to the microsecond): the first attempt to finish did not go alone while
  // four others were finishing.
  const [times] = await hooklane.database.rows<{ n: number }>(sql`
    select count(distinct completed_at)::int as n from webhook_dispatch where webhook_id = ${webhookId}
  `);
  expect(times!.n).toBe(1);
});

it("claims again after recording a retry, not after a batch of plain successes", async () => {
  const { hooklane } = harness;
  await webhookWithDispatches("wake", "loop_wake", 3);
  // Every step the loop sends (each claims), counted by its statement's name.
  let claims = 0;
  const database = Object.create(hooklane.database) as typeof hooklane.database;
  database.rows = ((query: Parameters<typeof database.rows>[0], name?: string) => {
    if (name === "hooklane_route_and_claim") claims++;
    return hooklane.database.rows(query, name);
  }) as typeof database.rows;
  let outcome: DeliveryOutcome = { kind: "success", statusCode: 200, responseExcerpt: null };
  // The first three POSTs are answered once all three are out.
  const answer = gate();
  const allPosted = gate();
  let posts = 0;
  const sender: HttpSender = {
    post: async (): Promise<DeliveryOutcome> => {
      if (++posts === 3) allPosted.open();
      if (posts <= 3) await answer.opened;
      return outcome;
    },
    options: () => Promise.reject(new Error("no consent requests here")),
    close: async () => {},
  };
  let running = true;
  // Idle sleeps far longer than the test: only wake-ups make the loop claim again.
  const loop = startLaneLoop({
    ...laneLoopOptions("w-wake", sender, () => running),
    database,
    maxIdleMs: 60_000,
  });
  await allPosted.opened;
  // Whatever wake-up was pending has been claimed for by now; then the three successes are recorded.
  await new Promise((resolve) => setTimeout(resolve, 100));
  const beforeRecords = claims;
  answer.open();
  await eventually(
    async () =>
      (
        await hooklane.database.rows<{ n: number }>(sql`
          select count(*)::int as n from webhook_dispatch where event_id like 'evt_loop_wake_%' and status = 'success'
        `)
      )[0]!.n,
    (n) => n === 3,
  );
  await new Promise((resolve) => setTimeout(resolve, 100));
  expect(claims).toBe(beforeRecords);

  // A failing attempt's record schedules a retry: the loop claims again to learn when it falls due.
  outcome = {
    kind: "failure",
    errorClass: "http_status",
    message: "503",
    statusCode: 503,
    responseExcerpt: null,
    gone: false,
  };
  await webhookWithDispatches("wake", "loop_wake_retry", 1);
  (hooklane.transport as PostgresTransport).signal.wake();
  await eventually(
    async () =>
      (
        await hooklane.database.rows<{ n: number }>(sql`
          select count(*)::int as n from webhook_attempt a join webhook_dispatch d on d.id = a.dispatch_id
          where d.event_id = 'evt_loop_wake_retry_1'
        `)
      )[0]!.n,
    (n) => n === 1,
  );
  const beforeRetryWake = claims;
  await eventually(
    async () => claims,
    (n) => n > beforeRetryWake,
  );
  running = false;
  (hooklane.transport as PostgresTransport).signal.wake();
  await loop.drain();
});
