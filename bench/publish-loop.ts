// The API's own cost of publishing, without HTTP: `POST /v3/payment-debts` called in-process (`app.request`)
// against PostgreSQL, flag off and flag on with one subscriber, alternating round by round in one process. Prints,
// per request and per round, this process's CPU (user + system: the socket writes to PostgreSQL included) and the
// CPU every PostgreSQL process on this machine spent (from /proc, so run it on a quiet machine with the server on
// this host), then the medians and their ratios. Scenario 1 of `npm run bench` measures the same through HTTP, where
// the load generator and the scheduler add their noise; this isolates what a change to the publish path saves.
//
//   node bench/publish-loop.ts [--requests 4000] [--rounds 6] [--concurrency 16]
//
// BENCH_DATABASE_URL is the admin URL (default postgres://postgres@127.0.0.1:5432/postgres).
import { parseArgs } from "node:util";
import { createApp } from "../app/app.ts";
import { mintToken } from "../lib/auth/jwt.ts";
import { loadConfig } from "../lib/config/env.ts";
import { createHooklane } from "../lib/create-hooklane.ts";
import { createLogger } from "../lib/log/logger.ts";
import { createBenchDatabase } from "./bench-database.ts";
import { BENCH_ACCOUNT, BENCH_EVENT_TYPE } from "./bench-event-body.ts";
import { postgresCpuMs } from "./product-processes.ts";
import { median } from "./stats.ts";

const { values } = parseArgs({
  options: {
    requests: { type: "string", default: "4000" },
    rounds: { type: "string", default: "6" },
    concurrency: { type: "string", default: "16" },
    // One side only, for profiling it (`perf record` on PostgreSQL, `--cpu-prof` here).
    only: { type: "string" },
  },
});
const requests = Number(values.requests);
const rounds = Number(values.rounds);
const concurrency = Number(values.concurrency);
const SECRET_KEY = "publish-loop-".padEnd(43, "k");
const JWT_SECRET = "publish-loop-jwt-secret-".padEnd(48, "j");

const db = await createBenchDatabase(
  process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres",
  SECRET_KEY,
  { asyncCommit: false },
);
try {
  // One subscriber, as in scenario 1; nothing delivers (no lane), so only the publisher's own cost is measured.
  await db.seedWebhooks(1, "http://127.0.0.1:9/never", "account");
  const logger = createLogger({ level: "warn", format: "json" });
  const app = async (publish: boolean) => {
    const config = loadConfig({
      NODE_ENV: "production",
      DATABASE_URL: db.url,
      WEBHOOK_SECRET_KEY: SECRET_KEY,
      AUTH_JWT_SECRET: JWT_SECRET,
      METRICS_TOKEN: "publish-loop-metrics-token",
      HOOKLANE_LANE: "off",
      // One token sends every request: the per-subject limit would refuse all but the first hundred.
      API_RATE_LIMIT: "false",
      CATALOGUE_AUTO_SYNC: "false",
      ENABLE_API_EVENT_QUEUE: String(publish),
    });
    const hooklane = await createHooklane(config, { logger });
    return { hooklane, app: createApp(hooklane) };
  };
  const variants = { off: await app(false), subscribed: await app(true) };
  const token = await mintToken(JWT_SECRET, { sub: "publish-loop", account: BENCH_ACCOUNT });
  const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" };
  const body = JSON.stringify({ amount: "42.00", currency: "EUR" });

  const run = async (key: keyof typeof variants, count: number) => {
    const { app } = variants[key];
    let next = 0;
    const one = async () => {
      while (next < count) {
        next++;
        const response = await app.request("/v3/payment-debts", { method: "POST", headers, body });
        if (response.status !== 201) throw new Error(`${key}: ${response.status} ${await response.text()}`);
      }
    };
    await Promise.all(Array.from({ length: concurrency }, one));
  };
  const measured = { off: [] as number[], subscribed: [] as number[] };
  const postgres = { off: [] as number[], subscribed: [] as number[] };
  // Warm-up: both sides, long enough for the JIT to settle.
  for (const key of ["off", "subscribed"] as const) await run(key, requests);
  for (let round = 1; round <= rounds; round++) {
    const order = round % 2 ? (["off", "subscribed"] as const) : (["subscribed", "off"] as const);
    for (const key of order.filter((k) => values.only === undefined || k === values.only)) {
      const cpu = process.cpuUsage();
      const pgBefore = postgresCpuMs();
      await run(key, requests);
      const used = process.cpuUsage(cpu);
      const apiUs = (used.user + used.system) / requests;
      const pgUs = ((postgresCpuMs() - pgBefore) * 1_000) / requests;
      measured[key].push(apiUs);
      postgres[key].push(pgUs);
      console.log(
        `round ${round} ${key.padEnd(10)} API ${apiUs.toFixed(1)} µs, PostgreSQL ${pgUs.toFixed(1)} µs a request`,
      );
    }
  }
  const api = { off: median(measured.off), subscribed: median(measured.subscribed) };
  const pg = { off: median(postgres.off), subscribed: median(postgres.subscribed) };
  console.log(
    `medians: flag off API ${api.off.toFixed(1)} + PostgreSQL ${pg.off.toFixed(1)} µs; ` +
      `subscribed API ${api.subscribed.toFixed(1)} + PostgreSQL ${pg.subscribed.toFixed(1)} µs; ` +
      `publishing adds ${(api.subscribed - api.off).toFixed(1)} + ${(pg.subscribed - pg.off).toFixed(1)} µs ` +
      `(API ${(api.subscribed / api.off).toFixed(3)}×, both ${((api.subscribed + pg.subscribed) / (api.off + pg.off)).toFixed(3)}×)`,
  );
  await variants.off.hooklane.database.close();
  await variants.subscribed.hooklane.database.close();
} finally {
  await db.drop();
}
