import type { Database } from "../../db/client.ts";
import { readLaneActivity, type LaneMinute, type LaneWorker } from "../../db/sql/lane-activity.ts";
import { readLaneSnapshot, type LaneSnapshot } from "../../db/sql/lane-snapshot.ts";

/** Minutes of throughput the lane status shows. */
export const THROUGHPUT_MINUTES = 15;

/** The lane as an operator sees it: the ledger's snapshot, who works it, and how fast. */
export interface LaneStatus {
  snapshot: LaneSnapshot;
  /** Age of the oldest due dispatch that should be moving, in seconds; 0 when none is due. */
  lagSeconds: number;
  /** Age of the oldest due route message, in seconds; 0 when none. */
  routeLagSeconds: number;
  workers: { live: LaneWorker[]; lost: LaneWorker[] };
  /** Attempts recorded per minute, oldest first; minutes without any are absent. */
  minutes: LaneMinute[];
  /** Over the last five whole minutes and the current one. */
  recent: { attempts: number; succeeded: number; perSecond: number };
}

/**
 * Reads the lane's state for operators: backlogs, lag, breakers, recovery
 * jobs and poison messages (`readLaneSnapshot`), live workers with their
 * heartbeat and last claim, workers lost within the hour, and throughput
 * minute by minute. A worker is live while its heartbeat is younger than
 * `liveWithinMs` (the lease: a dead worker's leases run out as it drops).
 */
export async function laneStatus(database: Database, options: { liveWithinMs: number }): Promise<LaneStatus> {
  const snapshot = await readLaneSnapshot(database, options);
  const activity = await readLaneActivity(database, { ...options, minutes: THROUGHPUT_MINUTES });
  const now = snapshot.at.getTime();
  const age = (since: Date | null) => (since === null ? 0 : Math.max(0, (now - since.getTime()) / 1_000));
  const fiveMinutesAgo = Math.floor(now / 60_000) * 60_000 - 5 * 60_000;
  const recent = activity.minutes.filter((m) => m.minute.getTime() >= fiveMinutesAgo);
  const attempts = recent.reduce((sum, m) => sum + m.attempts, 0);
  return {
    snapshot,
    lagSeconds: age(snapshot.deliver.oldestDueAt),
    routeLagSeconds: age(snapshot.route.oldestDueAt),
    workers: { live: activity.live, lost: activity.lost },
    minutes: activity.minutes,
    recent: {
      attempts,
      succeeded: recent.reduce((sum, m) => sum + m.succeeded, 0),
      perSecond: Math.round((attempts / ((now - fiveMinutesAgo) / 1_000)) * 100) / 100,
    },
  };
}
