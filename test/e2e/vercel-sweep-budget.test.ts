import { sql } from "drizzle-orm";
import { afterEach, expect, it } from "vitest";
import { webhookDispatch } from "../../lib/db/schema.ts";
import type { SweepReport } from "../../lib/webhook/sweeper/webhook-sweeper.ts";
import { DELIVER_TOPIC, ROUTE_TOPIC } from "../../lib/webhook/outbound/webhook-out-queue-registrations.ts";
import { pgliteFactory, startHarness, type Harness } from "../support/harness.ts";
import { exhaustedDispatches } from "../support/outage-dispatches.ts";
import { openDispatches } from "../support/open-dispatches.ts";

const ADMIN = { account: "acc_ops", admin: true };
const BACKLOG = { routes: 2_000, stranded: 2_000, recovered: 1_000 };
/** The sweep's clock in this test: every request to the queue costs 250 ms, and nothing else takes time. */
const MS_PER_REQUEST = 250;
const BUDGET_MS = 4_000;

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
});

it("sweeps a backlog larger than its budget in turns: every phase advances, the run stops in time, the next continues", async () => {
  harness = await startHarness(pgliteFactory, { driver: "vercel", lane: false });
  const { database } = harness.hooklane;
  const queue = harness.queue!;
  const subscribe = async (path: string) => {
    const response = await harness!.call("POST", "/v3/webhooks", {
      account: "acc_alice",
      body: { url: `https://hooks.example.com/${path}`, events: ["*"] },
    });
    expect(response.status).toBe(201);
    return response.body.id as string;
  };
  expect((await harness.call("POST", "/v3/accounts", { ...ADMIN, body: { id: "acc_alice", name: "A" } })).status).toBe(
    201,
  );
  await harness.settled();
  const stranded = await subscribe("stranded");
  const recovered = await subscribe("recovered");

  // Outbox rows no forward carried, due dispatches no message carries, and an outage's exhausted dispatches.
  await database.rows(sql`
    insert into webhook_route_job (message, run_at)
    select jsonb_build_object('eventId', 'evt_sweep_' || lpad(n::text, 6, '0'), 'type', 'account.updated',
      'resourceId', 'acc_alice', 'occurredAt', '2026-12-01T00:00:00.000Z', 'livemode', true), now()
    from generate_series(1, ${BACKLOG.routes}) as n
  `);
  await database.rows(sql`
    insert into webhook_dispatch (event_id, event_type, webhook_id, account, payload)
    select 'evt_stranded_' || lpad(n::text, 6, '0'), 'account.updated', ${stranded}, 'acc_alice', '{}'
    from generate_series(1, ${BACKLOG.stranded}) as n
  `);
  await openDispatches(database);
  const outage = exhaustedDispatches(recovered, "acc_alice", BACKLOG.recovered, 90, "outage");
  for (let i = 0; i < outage.length; i += 500)
    await database.db.insert(webhookDispatch).values(outage.slice(i, i + 500));
  const recovery = await harness.call("POST", `/v3/webhooks/${recovered}/recover`, {
    account: "acc_alice",
    body: { since: new Date(Date.now() - 2 * 3_600_000).toISOString() },
  });
  expect(recovery.status).toBe(202);

  const clock = () => (queue.requests.sends + queue.requests.batches) * MS_PER_REQUEST;
  const sent = () => ({
    routes: queue.messages.filter((m) => m.topic === ROUTE_TOPIC).length,
    deliver: queue.messages.filter((m) => m.topic === DELIVER_TOPIC).length,
  });
  const first = await harness.sweepReport({ budgetMs: BUDGET_MS, clock });

  // No step starts once the budget is spent: it is exceeded by at most the step that was running (4 requests).
  expect(first.elapsedMs).toBeLessThanOrEqual(BUDGET_MS + 4 * MS_PER_REQUEST);
  for (const phase of ["outbox", "stranded", "disable-failing-webhooks", "run-recovery-jobs"]) {
    expect(first.phases[phase]!.steps, phase).toBeGreaterThanOrEqual(1);
  }
  expect(first.left.sort()).toEqual(["outbox", "run-recovery-jobs", "stranded"]);
  expect(first.phases.outbox!.items).toBeLessThan(BACKLOG.routes);
  expect(first.phases.stranded!.items).toBeLessThan(BACKLOG.stranded);
  const afterFirst = sent();
  expect(afterFirst.routes).toBe(first.phases.outbox!.items);

  // The next runs pick up where it stopped, until nothing is left.
  const reports: SweepReport[] = [first];
  while (reports.at(-1)!.left.length > 0 && reports.length < 20) {
    reports.push(await harness.sweepReport({ budgetMs: BUDGET_MS, clock }));
  }
  expect(reports.at(-1)!.left).toEqual([]);
  expect(reports[1]!.phases.outbox!.items).toBeGreaterThan(0);
  const total = (phase: string) => reports.reduce((sum, r) => sum + r.phases[phase]!.items, 0);
  expect(total("outbox")).toBe(BACKLOG.routes);
  expect(total("stranded")).toBe(BACKLOG.stranded);
  expect(sent()).toEqual({ routes: BACKLOG.routes, deliver: BACKLOG.stranded + BACKLOG.recovered });
  const [row] = await database.rows<{ status: string; requeued: number }>(
    sql`select status, requeued from webhook_recovery where id = ${recovery.body.id}`,
  );
  expect(row).toEqual({ status: "completed", requeued: BACKLOG.recovered });
  console.info(
    `[sweep] ${reports.length} runs of ${BUDGET_MS} ms (simulated): ` +
      reports.map((r) => `${r.elapsedMs} ms, left [${r.left.join(", ")}]`).join("; "),
  );
}, 300_000);
