import { sql } from "drizzle-orm";
import { afterAll, beforeAll, expect, it } from "vitest";
import { eventually } from "../../../../test/support/eventually.ts";
import { startHarness, pgliteFactory, type Harness } from "../../../../test/support/harness.ts";
import { deliverDeps } from "../../../create-hooklane.ts";
import { webhookDispatch } from "../../../db/schema.ts";
import { claimDispatches } from "../../../db/sql/claim-dispatches.ts";
import type { DeliveryOutcome } from "../../outbound/webhook-delivery-outcome.ts";
import type { HttpSender } from "../../outbound/webhook-http-sender.ts";
import { startDeliverLoop, type ClaimTicket } from "./deliver-loop.ts";
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
  return webhookId;
}

/** A deliver loop of the harness's worker, POSTing through `sender`, ten at a time. */
function deliverLoop(workerId: string, sender: HttpSender, running: () => boolean) {
  return startDeliverLoop(deliverLoopOptions(workerId, sender, running));
}

function deliverLoopOptions(workerId: string, sender: HttpSender, running: () => boolean) {
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
    caps: hooklane.config.caps,
    maxIdleMs: 50,
    running,
  };
}

it("runs a worker's claims one at a time, each with what every earlier one handed over in `held`", async () => {
  const { hooklane } = harness;
  const webhookId = await webhookWithDispatches("held", "loop_turns", 1);
  // A subscriber that answers once told to: the attempt stays in flight until then.
  const answer = gate();
  const sender: HttpSender = {
    post: async (): Promise<DeliveryOutcome> => {
      await answer.opened;
      return { kind: "success", statusCode: 200, responseExcerpt: null };
    },
    close: async () => {},
  };
  // The loop claims nothing itself: only the claims below run.
  const loop = deliverLoop("w-turns", sender, () => false);
  await loop.done;

  // Claim 1 leases the row and hands it over only once let go; claim 2 is asked for meanwhile.
  const first = gate();
  const tickets: ClaimTicket[] = [];
  const claim1 = loop.claimTicket(async (ticket) => {
    tickets.push(ticket);
    const claimed = await claimDispatches(hooklane.database, {
      workerId: "w-turns",
      limit: 10,
      leaseMs: 60_000,
      caps: hooklane.config.caps,
      ...ticket,
    });
    await first.opened;
    loop.adopt(claimed.dispatches, 0);
    return claimed.dispatches.length;
  });
  const claim2 = loop.claimTicket(async (ticket) => {
    tickets.push(ticket);
    return 0;
  });
  await new Promise((resolve) => setTimeout(resolve, 50));
  expect(tickets).toHaveLength(1);
  first.open();
  expect(await claim1).toBe(1);
  await claim2;
  // Claim 2 ran after claim 1 handed its row over: the attempt in flight is in its `held`.
  expect(tickets).toEqual([
    { held: {}, claim: 1 },
    { held: { [webhookId]: 1 }, claim: 2 },
  ]);
  // A claim that throws does not stop the next.
  await expect(loop.claimTicket(async () => Promise.reject(new Error("no database")))).rejects.toThrow("no database");
  expect(await loop.claimTicket(async (ticket) => ticket.claim)).toBe(4);

  answer.open();
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
    close: async () => {},
  };
  let running = true;
  const loop = deliverLoop("w-together", sender, () => running);
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
  // Every claim the loop sends, counted by its statement's name.
  let claims = 0;
  const database = Object.create(hooklane.database) as typeof hooklane.database;
  database.rows = ((query: Parameters<typeof database.rows>[0], name?: string) => {
    if (name === "hooklane_claim") claims++;
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
    close: async () => {},
  };
  let running = true;
  // Idle sleeps far longer than the test: only wake-ups make the loop claim again.
  const loop = startDeliverLoop({
    ...deliverLoopOptions("w-wake", sender, () => running),
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
  (hooklane.transport as PostgresTransport).deliverSignal.wake();
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
  (hooklane.transport as PostgresTransport).deliverSignal.wake();
  await loop.drain();
});
