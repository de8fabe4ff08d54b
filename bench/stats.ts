/** The value at quantile `q` (0..1) of ascending `sorted`, nearest rank; NaN when empty. */
export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}

export interface Distribution {
  count: number;
  p50: number;
  p95: number;
  p99: number;
  max: number;
}

export function distribution(values: readonly number[]): Distribution {
  const sorted = [...values].sort((a, b) => a - b);
  return {
    count: sorted.length,
    p50: quantile(sorted, 0.5),
    p95: quantile(sorted, 0.95),
    p99: quantile(sorted, 0.99),
    max: sorted.at(-1) ?? NaN,
  };
}

/** The middle of an odd count, the mean of the two middles of an even one. */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length / 2;
  return sorted.length % 2 ? sorted[Math.floor(mid)]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/**
 * Deliveries per second in steady state: the rate between the 10th and the
 * 90th percentile of arrival times, so ramp-up and the tail do not count.
 */
export function sustainedRate(arrivalTimesMs: readonly number[]): number {
  const sorted = [...arrivalTimesMs].sort((a, b) => a - b);
  if (sorted.length < 10) return NaN;
  const from = Math.floor(sorted.length * 0.1);
  const to = Math.floor(sorted.length * 0.9);
  return ((to - from) * 1_000) / (sorted[to]! - sorted[from]!);
}

/**
 * Milliseconds from each resource's 2xx to the first arrival of a POST for
 * it; resources that never arrived are left out (and counted by the caller).
 */
export function latenciesMs(
  sent: { ids: readonly string[]; times: readonly number[] },
  arrived: { ids: readonly string[]; times: readonly number[] },
): number[] {
  const firstArrival = new Map<string, number>();
  arrived.ids.forEach((id, i) => {
    if (!firstArrival.has(id)) firstArrival.set(id, arrived.times[i]!);
  });
  const latencies: number[] = [];
  sent.ids.forEach((id, i) => {
    const at = firstArrival.get(id);
    if (at !== undefined) latencies.push(at - sent.times[i]!);
  });
  return latencies;
}
