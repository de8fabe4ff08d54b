import { PgBoss, type Queue } from "pg-boss";
import type { Database } from "../../lib/db/client.ts";
import { insertPeerDeliveries, type PeerJob, type PeerProducer } from "./peer-ledger.ts";

/** Jobs per fetch. */
export const PG_BOSS_BATCH = 50;

/** The retry policy a team would declare: 5 retries, exponential from 5 s. */
export const PG_BOSS_QUEUE_OPTIONS: Omit<Queue, "name"> = {
  retryLimit: 5,
  retryDelay: 5,
  retryBackoff: true,
  notify: true,
};

const ENQUEUE_CHUNK = 1_000;

/** The pg-boss peer's producer side, on the same database as its ledger. */
export async function createPgBossProducer(
  database: Database,
  databaseUrl: string,
  queue: string,
): Promise<PeerProducer> {
  const boss = new PgBoss({ connectionString: databaseUrl, max: 4, supervise: false, schedule: false });
  boss.on("error", (error) => console.error("[pg-boss producer]", error));
  await boss.start();
  await boss.createQueue(queue, PG_BOSS_QUEUE_OPTIONS);
  return {
    async enqueue(url, events) {
      for (let start = 0; start < events.length; start += ENQUEUE_CHUNK) {
        const jobs = await insertPeerDeliveries(database, url, events.slice(start, start + ENQUEUE_CHUNK));
        await boss.insert(
          queue,
          jobs.map((data: PeerJob) => ({ data })),
        );
      }
    },
    close: () => boss.stop({ graceful: false, timeout: 2_000 }),
  };
}
