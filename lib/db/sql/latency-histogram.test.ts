import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { pgliteFactory } from "../../../test/support/harness.ts";
import { histogramOf, histogramPercentile, LATENCY_BUCKETS, latencyBucket } from "./latency-histogram.ts";

/** percentile_disc over whole-millisecond durations, as the attempt log would answer it. */
function exactPercentile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(1, Math.ceil(q * sorted.length)) - 1]!;
}

/** The histogram of some durations, as the rollups would count them. */
const histogramOfValues = (values: number[]) =>
  histogramOf(values.map((ms) => ({ bucket: latencyBucket(ms), attempts: 1 })));

describe("the latency histogram", () => {
  it("puts every whole millisecond up to 120 s in the same bucket in SQL as in code", async () => {
    const { database, drop } = await pgliteFactory();
    try {
      const [row] = await database.rows<{ buckets: number[] }>(
        // hooklane_latency_bucket (lib/db/functions/) is what the record statement buckets durations with.
        sql`select array_agg(hooklane_latency_bucket(i::int) order by i) as buckets from generate_series(0, 120000) i`,
      );
      const buckets = row!.buckets;
      const mismatches = buckets.flatMap((bucket, ms) => (bucket === latencyBucket(ms) ? [] : [ms]));
      expect(mismatches).toEqual([]);
      expect(new Set(buckets).size).toBeGreaterThan(70);
      expect(Math.max(...buckets)).toBe(LATENCY_BUCKETS.count - 1);
    } finally {
      await database.close();
      await drop();
    }
  });

  it("reads percentiles within 10 % of the exact ones, exactly below 8 ms", () => {
    let seed = 42;
    const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    for (const spread of [3, 20, 300, 9_000]) {
      const values = Array.from({ length: 2_000 }, () => Math.round(random() ** 2 * spread));
      for (const q of [0.5, 0.95]) {
        const exact = exactPercentile(values, q);
        const read = histogramPercentile(histogramOfValues(values), q)!;
        if (exact < 8) expect(read, `spread ${spread} q ${q}`).toBe(exact);
        else expect(Math.abs(read - exact) / exact, `spread ${spread} q ${q}: ${read} vs ${exact}`).toBeLessThan(0.1);
      }
    }
  });

  it("sums per-bucket counts, ignores buckets out of range, and has no percentile without attempts", () => {
    const histogram = histogramOf([
      { bucket: latencyBucket(2), attempts: 3 },
      { bucket: latencyBucket(2), attempts: 1 },
      { bucket: latencyBucket(500), attempts: 1 },
      { bucket: LATENCY_BUCKETS.count, attempts: 7 },
    ]);
    expect(histogram.reduce((a, b) => a + b, 0)).toBe(5);
    expect(histogramPercentile(histogram, 0.5)).toBe(2);
    expect(histogramPercentile(histogramOf([]), 0.5)).toBeUndefined();
    // Past every bound: the open last bucket reads as its lower bound.
    expect(histogramPercentile(histogramOfValues([10_000_000]), 0.5)).toBe(Math.ceil(LATENCY_BUCKETS.ratio ** 78));
  });
});
