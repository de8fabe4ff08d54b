import { Queue, type ConnectionOptions, type JobsOptions } from "bullmq";
import type { Database } from "../../lib/db/client.ts";
import { insertPeerDeliveries, type PeerProducer } from "./peer-ledger.ts";

/** The retry policy a team would declare: 6 attempts, exponential from 5 s; finished jobs leave Redis. */
export const BULLMQ_JOB_OPTIONS: JobsOptions = {
  attempts: 6,
  backoff: { type: "exponential", delay: 5_000 },
  removeOnComplete: true,
  removeOnFail: 1_000,
};

const ENQUEUE_CHUNK = 1_000;

/** Redis connection options from a `redis://host:port` URL. */
export function redisConnection(redisUrl: string): ConnectionOptions {
  const url = new URL(redisUrl);
  return { host: url.hostname, port: Number(url.port || 6379), maxRetriesPerRequest: null };
}

/** The BullMQ peer's producer side: ledger rows in PostgreSQL, jobs in Redis. `close` removes the queue. */
export function createBullmqProducer(database: Database, redisUrl: string, queueName: string): PeerProducer {
  const queue = new Queue(queueName, { connection: redisConnection(redisUrl) });
  return {
    async enqueue(url, events) {
      for (let start = 0; start < events.length; start += ENQUEUE_CHUNK) {
        const jobs = await insertPeerDeliveries(database, url, events.slice(start, start + ENQUEUE_CHUNK));
        await queue.addBulk(jobs.map((data) => ({ name: "deliver", data, opts: BULLMQ_JOB_OPTIONS })));
      }
    },
    async close() {
      await queue.obliterate({ force: true });
      await queue.close();
    },
  };
}
