// The lane's database work for events that arrive through the API, alone: route jobs routed and their dispatches
// claimed (one statement), then recorded, in a loop, no HTTP, on a throwaway database. Prints, per event, the wall time of each
// statement and the CPU every PostgreSQL process on this machine spent (from /proc, so run it on a quiet machine
// with the server on this host). `--batch` is how many route jobs a route statement takes, and so how many attempts
// a record statement carries: the end-to-end scenario's worker sees ten or fewer at a time under load.
//
//   node bench/route-record-loop.ts [--events 6000] [--batch 10]
//
// BENCH_DATABASE_URL is the admin URL (default postgres://postgres@127.0.0.1:5432/postgres).
import { parseArgs } from "node:util";
import { sql } from "drizzle-orm";
import { recordAttempts } from "../lib/db/sql/record-attempts.ts";
import { routeAndClaim } from "../lib/db/sql/route-and-claim.ts";
import { enqueueRouteJob } from "../lib/db/sql/route-jobs.ts";
import { ROUTE_RULES_JSON } from "../lib/webhook/outbound/webhook-out-route.handler.ts";
import { createBenchDatabase } from "./bench-database.ts";
import { BREAKER_RULE, succeeded } from "./loop-records.ts";
import { BENCH_ACCOUNT, BENCH_EVENT_TYPE } from "./bench-event-body.ts";
import { postgresCpuMs } from "./product-processes.ts";

const { values } = parseArgs({
  options: {
    events: { type: "string", default: "6000" },
    batch: { type: "string", default: "10" },
  },
});
const events = Number(values.events);
const batch = Number(values.batch);
const WORKER = "route-record-loop";
// The scenario's one webhook is held to its cap of 16 in flight; here nothing stays in flight between steps.
const caps = { perWebhook: 16, perOrigin: 1_000_000, perAccount: 1_000_000 };

const db = await createBenchDatabase(
  process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres",
  "route-record-loop-".padEnd(43, "k"),
  { asyncCommit: true },
);
try {
  // As the end-to-end scenario has them: one subscriber, and events about payment debts that exist.
  await db.seedWebhooks(1, "http://127.0.0.1:9/never", "account");
  await db.database.rows(sql`
    insert into payment_debt (id, account, amount, currency)
    select 'pd_loop_' || g, ${BENCH_ACCOUNT}, 10, 'EUR' from generate_series(1, ${events}) g
  `);
  for (let i = 1; i <= events; i++) {
    await enqueueRouteJob(db.database, {
      eventId: `evt_loop${String(i).padStart(8, "0")}`,
      type: BENCH_EVENT_TYPE,
      resourceId: `pd_loop_${i}`,
      occurredAt: new Date().toISOString(),
      livemode: false,
      account: BENCH_ACCOUNT,
    });
  }

  let done = 0;
  let cursor = "";
  const ms = { step: 0, record: 0 };
  const timed = async <T>(part: keyof typeof ms, run: () => Promise<T>): Promise<T> => {
    const at = performance.now();
    try {
      return await run();
    } finally {
      ms[part] += performance.now() - at;
    }
  };
  const cpuBefore = postgresCpuMs();
  const started = performance.now();
  for (let round = 0; round < 2 * events && done < events; round++) {
    const step = await timed("step", () =>
      routeAndClaim(db.database, {
        workerId: WORKER,
        routeLimit: batch,
        routeLeaseMs: 30_000,
        rulesJson: ROUTE_RULES_JSON,
        claimLimit: batch,
        leaseMs: 30_000,
        caps,
        after: cursor,
        held: {},
      }),
    );
    cursor = step.claim?.cursor ?? cursor;
    const leased = step.claim?.dispatches ?? [];
    if (leased.length === 0 && step.found === 0) break;
    const records = succeeded(leased);
    await timed("record", () => recordAttempts(db.database, WORKER, records, BREAKER_RULE));
    done += records.length;
  }
  const wallMs = performance.now() - started;
  const perEvent = (value: number) => `${Math.round((value * 1_000) / done)} µs`;
  console.log(
    `${done} events, route statements of up to ${batch}: per event wall ${perEvent(wallMs)}, ` +
      `route and claim ${perEvent(ms.step)}, record ${perEvent(ms.record)}, ` +
      `PostgreSQL CPU ${perEvent(postgresCpuMs() - cpuBefore)}`,
  );
} finally {
  await db.drop();
}
