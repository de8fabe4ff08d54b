import type { Database } from "../../db/client.ts";
import { readHealthHours } from "../../db/sql/health-history.ts";
import { histogramOf, histogramPercentile } from "../../db/sql/latency-histogram.ts";

const HOUR_MS = 3_600_000;

/** The windows a history covers: 24 one-hour slots, or 28 six-hour slots over 7 days. */
export const HISTORY_WINDOWS = {
  "24h": { slots: 24, slotHours: 1 },
  "7d": { slots: 28, slotHours: 6 },
} as const;
export type HistoryWindow = keyof typeof HISTORY_WINDOWS;

/** One slot of a history: what was attempted in it, and how long attempts took. */
export interface HealthSlot {
  start: Date;
  attempts: number;
  succeeded: number;
  /** Attempt durations, ms, within 7 % (LATENCY_BUCKETS); null for a slot without attempts. */
  latencyMs: { p50: number; p95: number } | null;
}

export interface HealthHistory {
  window: HistoryWindow;
  slotHours: number;
  /** Oldest first; the last slot holds the current hour. */
  slots: HealthSlot[];
}

/**
 * Delivery outcomes and latency over `window`, slot by slot, for one webhook
 * or a whole account, from the hourly rollups the lane keeps as it records
 * attempts (test events are not in them). Slots end with the current hour.
 */
export async function healthHistory(
  database: Database,
  of: { webhookId: string } | { account: string },
  window: HistoryWindow,
): Promise<HealthHistory> {
  const { slots: count, slotHours } = HISTORY_WINDOWS[window];
  const slotMs = slotHours * HOUR_MS;
  // Slots are aligned on the database's clock, in UTC, the last one holding the current hour. Read from a slot
  // earlier by this process's clock, so a clock that differs by less than a slot misses nothing.
  const endOf = (now: number) => Math.floor(now / slotMs) * slotMs + slotMs;
  const { now, rows } = await readHealthHours(database, of, new Date(endOf(Date.now()) - (count + 1) * slotMs));
  const since = new Date(endOf(now.getTime()) - count * slotMs);
  const perSlot = Array.from({ length: count }, () => [] as { bucket: number; attempts: number; succeeded: number }[]);
  for (const row of rows) {
    const index = Math.floor((row.hour.getTime() - since.getTime()) / slotMs);
    if (index >= 0 && index < count) perSlot[index]!.push(row);
  }
  return {
    window,
    slotHours,
    slots: perSlot.map((buckets, i) => {
      const histogram = histogramOf(buckets);
      const p50 = histogramPercentile(histogram, 0.5);
      const p95 = histogramPercentile(histogram, 0.95);
      return {
        start: new Date(since.getTime() + i * slotMs),
        attempts: buckets.reduce((sum, b) => sum + b.attempts, 0),
        succeeded: buckets.reduce((sum, b) => sum + b.succeeded, 0),
        latencyMs: p50 === undefined || p95 === undefined ? null : { p50, p95 },
      };
    }),
  };
}
