import { sql } from "drizzle-orm";
import type { Database } from "../client.ts";
import { boundedRead } from "./bounded-read.ts";

export interface LaneWorker {
  id: string;
  startedAt: Date;
  heartbeatAt: Date;
  lastClaimAt: Date | null;
  inFlight: number;
}

export interface LaneMinute {
  minute: Date;
  attempts: number;
  succeeded: number;
}

/** Workers whose heartbeat stopped longer ago than this are forgotten by the lane status. */
const LOST_FOR_MS = 3_600_000;

/**
 * Who works the lane and how fast, in one bounded statement: workers whose
 * heartbeat is younger than `liveWithinMs` (live) or stopped within the last
 * hour (lost: killed without draining), and attempts recorded per minute over
 * the last `minutes` minutes, the current one included.
 */
export async function readLaneActivity(
  database: Database,
  options: { liveWithinMs: number; minutes: number },
): Promise<{ live: LaneWorker[]; lost: LaneWorker[]; minutes: LaneMinute[] }> {
  const [row] = await boundedRead<{ workers: RawWorker[] | string | null; minutes: RawMinute[] | string | null }>(
    database,
    sql`
    select
      (select json_agg(w order by w.started_at) from (
        select id, started_at, heartbeat_at, last_claim_at, in_flight,
          heartbeat_at > now() - ${options.liveWithinMs} * interval '1 millisecond' as live
        from webhook_worker where heartbeat_at > now() - ${LOST_FOR_MS} * interval '1 millisecond'
      ) w) as workers,
      (select json_agg(m order by m.minute) from (
        select minute, sum(attempts)::int as attempts, sum(succeeded)::int as succeeded from webhook_lane_minute
        where minute > date_trunc('minute', now()) - ${options.minutes} * interval '1 minute'
        group by minute
      ) m) as minutes
  `,
  );
  const parse = <T>(value: T[] | string | null | undefined): T[] =>
    value == null ? [] : typeof value === "string" ? (JSON.parse(value) as T[]) : value;
  const live: LaneWorker[] = [];
  const lost: LaneWorker[] = [];
  for (const w of parse(row?.workers)) {
    (w.live ? live : lost).push({
      id: w.id,
      startedAt: new Date(w.started_at),
      heartbeatAt: new Date(w.heartbeat_at),
      lastClaimAt: w.last_claim_at ? new Date(w.last_claim_at) : null,
      inFlight: w.in_flight,
    });
  }
  return {
    live,
    lost,
    minutes: parse(row?.minutes).map((m) => ({
      minute: new Date(m.minute),
      attempts: m.attempts,
      succeeded: m.succeeded,
    })),
  };
}

interface RawWorker {
  id: string;
  started_at: string;
  heartbeat_at: string;
  last_claim_at: string | null;
  in_flight: number;
  live: boolean;
}

interface RawMinute {
  minute: string;
  attempts: number;
  succeeded: number;
}
