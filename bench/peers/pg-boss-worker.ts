// The pg-boss peer's worker process: batches fetched with pg-boss's own
// SKIP LOCKED query, woken by its LISTEN/NOTIFY, each job signed, POSTed and
// recorded in the ledger; a failed job is retried by pg-boss's backoff.
import { PgBoss } from "pg-boss";
import { serveRpc } from "../rpc.ts";
import { createPeerDeliverer } from "./peer-delivery.ts";
import type { PeerJob, PeerWorkerConfig } from "./peer-ledger.ts";
import { PG_BOSS_BATCH, PG_BOSS_QUEUE_OPTIONS } from "./pg-boss-pipeline.ts";

const config = JSON.parse(process.env.BENCH_PEER ?? "{}") as PeerWorkerConfig;
const deliverer = createPeerDeliverer(config);
const boss = new PgBoss({ connectionString: config.databaseUrl, max: 10, useListenNotify: true });
boss.on("error", (error) => console.error("[pg-boss peer]", error));
await boss.start();
await boss.createQueue(config.queue, PG_BOSS_QUEUE_OPTIONS);
await boss.work<PeerJob>(
  config.queue,
  {
    batchSize: PG_BOSS_BATCH,
    // Enough fetch loops that the jobs in flight match the lane's concurrency.
    localConcurrency: Math.max(1, Math.round(config.concurrency / PG_BOSS_BATCH)),
    perJobResults: true,
    burstWhenBatchFull: true,
    pollingIntervalSeconds: 0.5,
  },
  (jobs) =>
    Promise.all(
      jobs.map(async (job) => {
        try {
          await deliverer.deliver(job.data);
          return { id: job.id, status: "completed" as const };
        } catch (error) {
          return { id: job.id, status: "failed" as const, output: { message: String((error as Error).message) } };
        }
      }),
    ),
);

process.on("SIGTERM", () => {
  void boss
    .stop({ graceful: true, timeout: 5_000 })
    .then(() => deliverer.close())
    .finally(() => process.exit(0));
});
serveRpc({});
