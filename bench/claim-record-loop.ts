// The lane's database work alone: claim and record in a loop, no HTTP, on a
// throwaway database. Prints, per delivery, the wall time of each statement and
// the CPU every PostgreSQL process on this machine spent (from /proc, so run it
// on a quiet machine with the server on this host).
//
//   node bench/claim-record-loop.ts [--webhooks 16] [--deliveries 12000] [--limit 32]
//
// BENCH_DATABASE_URL is the admin URL (default postgres://postgres@127.0.0.1:5432/postgres).
import { parseArgs } from "node:util";
import { sql } from "drizzle-orm";
import { claimDispatches } from "../lib/db/sql/claim-dispatches.ts";
import { recordAttempts } from "../lib/db/sql/record-attempts.ts";
import { createBenchDatabase } from "./bench-database.ts";
import { BREAKER_RULE, succeeded } from "./loop-records.ts";
import { postgresCpuMs } from "./product-processes.ts";

const { values } = parseArgs({
  options: {
    webhooks: { type: "string", default: "16" },
    deliveries: { type: "string", default: "12000" },
    limit: { type: "string", default: "32" },
  },
});
const webhooks = Number(values.webhooks);
const deliveries = Number(values.deliveries);
const limit = Number(values.limit);
const WORKER = "claim-record-loop";

const db = await createBenchDatabase(
  process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres",
  "claim-record-loop-".padEnd(43, "k"),
  { asyncCommit: true },
);
try {
  const ids = await db.seedWebhooks(webhooks, "http://127.0.0.1:9/never", "account");
  await db.insertDispatches(ids, deliveries + 4 * limit, "loop");
  await db.database.rows(sql`vacuum analyze webhook_dispatch`);

  const caps = { perWebhook: 16, perOrigin: 1_000_000, perAccount: 1_000_000 };
  let done = 0;
  let cursor = "";
  let claimMs = 0;
  let recordMs = 0;
  const cpuBefore = postgresCpuMs();
  const started = performance.now();
  for (let round = 0; round < deliveries && done < deliveries; round++) {
    let at = performance.now();
    const claim = await claimDispatches(db.database, { workerId: WORKER, limit, leaseMs: 30_000, caps, after: cursor });
    claimMs += performance.now() - at;
    cursor = claim.cursor;
    if (claim.dispatches.length === 0) break;
    const records = succeeded(claim.dispatches);
    at = performance.now();
    await recordAttempts(db.database, WORKER, records, BREAKER_RULE);
    recordMs += performance.now() - at;
    done += records.length;
  }
  const wallMs = performance.now() - started;
  const perDelivery = (ms: number) => `${Math.round((ms * 1_000) / done)} µs`;
  console.log(
    `${done} deliveries over ${webhooks} webhooks, claims of up to ${limit}: per delivery ` +
      `wall ${perDelivery(wallMs)}, claim ${perDelivery(claimMs)}, record ${perDelivery(recordMs)}, ` +
      `PostgreSQL CPU ${perDelivery(postgresCpuMs() - cpuBefore)}`,
  );
} finally {
  await db.drop();
}
