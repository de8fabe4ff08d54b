import { sql } from "drizzle-orm";
import type { Database } from "../../lib/db/client.ts";

/** One delivery as both peers' jobs carry it. */
export interface PeerJob {
  deliveryId: string;
  eventId: string;
  url: string;
  payload: string;
}

/** A peer's producer side, run by the benchmark in its own process. */
export interface PeerProducer {
  /** Writes the ledger rows and enqueues one job per row, in chunks (deliveries start meanwhile). */
  enqueue(url: string, events: readonly { eventId: string; payload: string }[]): Promise<void>;
  close(): Promise<void>;
}

/** How a peer worker process is configured (one JSON variable, `BENCH_PEER`). */
export interface PeerWorkerConfig {
  databaseUrl: string;
  redisUrl: string;
  queue: string;
  secret: string;
  /** Jobs in flight at once, and keep-alive sockets to the subscriber. */
  concurrency: number;
  connections: number;
}

/**
 * The peers' delivery ledger: what a team would write first, one row per
 * delivery with its status, attempt count and last answer.
 */
export async function createPeerLedger(database: Database): Promise<void> {
  await database.rows(sql`
    create table if not exists peer_delivery (
      id bigserial primary key,
      event_id text not null,
      url text not null,
      payload text not null,
      status text not null default 'pending',
      attempts int not null default 0,
      last_status_code int,
      last_error text,
      delivered_at timestamptz,
      created_at timestamptz not null default now()
    )
  `);
}

/** Inserts one pending ledger row per event and returns the jobs that carry them. */
export async function insertPeerDeliveries(
  database: Database,
  url: string,
  events: readonly { eventId: string; payload: string }[],
): Promise<PeerJob[]> {
  const rows = await database.rows<{ id: string | number; event_id: string; payload: string }>(sql`
    insert into peer_delivery (event_id, url, payload)
    select r.e, ${url}, r.p from jsonb_to_recordset(${JSON.stringify(events.map((e) => ({ e: e.eventId, p: e.payload })))}::jsonb)
      as r(e text, p text)
    returning id, event_id, payload
  `);
  return rows.map((row) => ({ deliveryId: String(row.id), eventId: row.event_id, url, payload: row.payload }));
}

/** Ledger rows delivered successfully so far. */
export async function peerDelivered(database: Database): Promise<number> {
  const [row] = await database.rows<{ n: number }>(
    sql`select count(*)::int as n from peer_delivery where status = 'success'`,
  );
  return row?.n ?? 0;
}

export async function resetPeerLedger(database: Database): Promise<void> {
  await database.rows(sql`truncate peer_delivery`);
}
