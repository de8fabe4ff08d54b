/**
 * The duration buckets of `webhook_health_hour`: bucket 0 holds
 * attempts under 1 ms; bucket i ≥ 1 holds [RATIO^(i-1), RATIO^i) ms; the last
 * one everything from 1.15^78 ms (54 s) on. A
 * percentile read as its bucket's geometric middle is off by at most
 * √1.15 − 1 ≈ 7 %. Changing either constant needs a new table: stored rows
 * would be read with the wrong bounds.
 */
export const LATENCY_BUCKETS = { ratio: 1.15, count: 80 } as const;

const LN_RATIO = Math.log(LATENCY_BUCKETS.ratio);
const LAST = LATENCY_BUCKETS.count - 1;

/** The bucket of a duration in ms; the same arithmetic as `hooklane_latency_bucket` (lib/db/functions/). */
export function latencyBucket(ms: number): number {
  if (ms < 1) return 0;
  return Math.min(LAST, Math.floor(Math.log(ms) / LN_RATIO) + 1);
}

/** A histogram (element i counts bucket i) from per-bucket counts; buckets out of range are ignored. */
export function histogramOf(counts: readonly { bucket: number; attempts: number }[]): number[] {
  const histogram = new Array<number>(LATENCY_BUCKETS.count).fill(0);
  for (const { bucket, attempts } of counts) {
    if (bucket >= 0 && bucket < histogram.length) histogram[bucket]! += attempts;
  }
  return histogram;
}

/**
 * The `q` quantile (0 < q ≤ 1) of the integer ms durations a histogram
 * counts, by nearest rank (as `percentile_disc`): the value of a bucket that
 * holds a single integer, else the bucket's geometric middle (within 7 %);
 * the open last bucket reads as its lower bound. Undefined when it is empty.
 */
export function histogramPercentile(histogram: readonly number[], q: number): number | undefined {
  const total = histogram.reduce((sum, n) => sum + n, 0);
  if (total === 0) return undefined;
  const rank = Math.max(1, Math.ceil(q * total));
  let seen = 0;
  for (let i = 0; i < histogram.length; i++) {
    seen += histogram[i]!;
    if (seen >= rank) return bucketValue(i);
  }
  return bucketValue(histogram.length - 1);
}

function bucketValue(i: number): number {
  if (i === 0) return 0;
  const low = LATENCY_BUCKETS.ratio ** (i - 1);
  if (i === LAST) return Math.ceil(low);
  const high = LATENCY_BUCKETS.ratio ** i;
  // Durations are whole milliseconds: a bucket narrower than that holds at most one of them.
  const first = Math.ceil(low);
  if (first + 1 >= high) return first;
  return Math.round(Math.sqrt(low * high) * 10) / 10;
}
