// The route stage's cost per event with webhook filters, against the same routing without them, in one run: an
// account with `--webhooks` unfiltered webhooks and another with as many filtered ones
// (`currency in ["EUR", "USD"] and not status == "void"`), all hearing payment-debt.created. Events go through
// `hooklane_route_events` (the route statement of both transports) in batches of `--batch`, the three cases taking
// turns batch by batch so a noisy machine weighs on each alike:
//
//   plain     to the unfiltered webhooks: every event matches every webhook
//   filtered  to the filtered ones, every event matching (the same dispatches written: the filter's own cost)
//   rejected  to the filtered ones, no event matching (nothing written: what a filter saves)
//
// Prints the median wall time per event of each case, and the ratio of each to `plain`.
//
//   node bench/route-filter-loop.ts [--webhooks 100] [--events 1000] [--batch 10]
//
// BENCH_DATABASE_URL is the admin URL (default postgres://postgres@127.0.0.1:5432/postgres).
import { parseArgs } from "node:util";
import { sql } from "drizzle-orm";
import { ROUTE_RULES_JSON } from "../lib/webhook/outbound/webhook-out-route.handler.ts";
import { filterPath, parseFilter } from "../lib/webhook/outbound/webhook-filter.ts";
import { createBenchDatabase } from "./bench-database.ts";
import { BENCH_ACCOUNT, BENCH_EVENT_TYPE } from "./bench-event-body.ts";
import { median } from "./stats.ts";

const { values } = parseArgs({
  options: {
    webhooks: { type: "string", default: "100" },
    events: { type: "string", default: "1000" },
    batch: { type: "string", default: "10" },
  },
});
const webhooks = Number(values.webhooks);
const events = Number(values.events);
const batch = Number(values.batch);
const FILTER = 'currency in ["EUR", "USD"] and not status == "void"';
const FILTERED_ACCOUNT = `${BENCH_ACCOUNT}_filtered`;

const db = await createBenchDatabase(
  process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres",
  "route-filter-loop-".padEnd(43, "k"),
  { asyncCommit: true },
);
try {
  await db.seedWebhooks(webhooks, "http://127.0.0.1:9/never", "account", BENCH_ACCOUNT);
  const filtered = await db.seedWebhooks(webhooks, "http://127.0.0.1:9/never", "account", FILTERED_ACCOUNT);
  await db.database.rows(sql`
    update webhook set filter = ${FILTER}, filter_path = ${filterPath(parseFilter(FILTER))}::jsonpath
    where id = any (${`{${filtered.join(",")}}`}::text[])
  `);
  const rule = JSON.stringify((JSON.parse(ROUTE_RULES_JSON) as Record<string, unknown>)[BENCH_EVENT_TYPE]);

  const cases = {
    plain: { account: BENCH_ACCOUNT, currency: "EUR", expected: webhooks },
    filtered: { account: FILTERED_ACCOUNT, currency: "EUR", expected: webhooks },
    rejected: { account: FILTERED_ACCOUNT, currency: "GBP", expected: 0 },
  } as const;
  type Case = keyof typeof cases;
  const perEvent: Record<Case, number[]> = { plain: [], filtered: [], rejected: [] };
  const order: Case[] = ["plain", "filtered", "rejected"];
  let n = 0;
  for (let round = 0; round < Math.ceil(events / batch); round++) {
    // Each round starts with another case, so none always runs first.
    for (const name of [...order.slice(round % 3), ...order.slice(0, round % 3)]) {
      const { account, currency, expected } = cases[name];
      const messages = Array.from({ length: batch }, () => {
        n++;
        return JSON.stringify({
          eventId: `evt_filter${String(n).padStart(8, "0")}`,
          type: BENCH_EVENT_TYPE,
          resourceId: `pd_filter_${n}`,
          occurredAt: new Date().toISOString(),
          livemode: false,
          account,
          attributes: { currency, status: "open" },
        });
      });
      const at = performance.now();
      const [row] = await db.database.rows<{ routed: number[] }>(sql`
        select routed from hooklane_route_events(${`{${messages.map((m) => JSON.stringify(m)).join(",")}}`}::jsonb[],
          array_fill(${rule}::jsonb, array[${batch}::int]))
      `);
      perEvent[name].push((performance.now() - at) / batch);
      if (row!.routed.some((count) => count !== expected)) {
        throw new Error(`${name}: routed ${row!.routed.join(",")}, expected ${expected} each`);
      }
    }
  }
  const plain = median(perEvent.plain);
  console.log(
    `${webhooks} webhooks per account, ${events} events per case in statements of ${batch}; filter: ${FILTER}`,
  );
  for (const name of order) {
    const value = median(perEvent[name]);
    console.log(
      `${name.padEnd(9)} ${Math.round(value * 1_000)} µs per event (median of ${perEvent[name].length} statements), ` +
        `${(value / plain).toFixed(3)}× plain`,
    );
  }
} finally {
  await db.drop();
}
