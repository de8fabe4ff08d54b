// The BullMQ peer's worker process: jobs from Redis at the lane's
// concurrency, each signed, POSTed and recorded in the PostgreSQL ledger; a
// failed job is retried by BullMQ's backoff.
import { Worker } from "bullmq";
import { serveRpc } from "../rpc.ts";
import { redisConnection } from "./bullmq-pipeline.ts";
import { createPeerDeliverer } from "./peer-delivery.ts";
import type { PeerJob, PeerWorkerConfig } from "./peer-ledger.ts";

const config = JSON.parse(process.env.BENCH_PEER ?? "{}") as PeerWorkerConfig;
const deliverer = createPeerDeliverer(config);
const worker = new Worker<PeerJob>(config.queue, (job) => deliverer.deliver(job.data), {
  connection: redisConnection(config.redisUrl),
  concurrency: config.concurrency,
});
worker.on("error", (error) => console.error("[bullmq peer]", error));
await worker.waitUntilReady();

process.on("SIGTERM", () => {
  void worker
    .close()
    .then(() => deliverer.close())
    .finally(() => process.exit(0));
});
serveRpc({});
