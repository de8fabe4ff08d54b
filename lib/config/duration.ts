const UNITS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** Parses `250ms`, `5s`, `5m`, `1h`, `1d` or a bare number of milliseconds. */
export function parseDuration(text: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)?$/.exec(text.trim());
  if (!match) throw new Error(`"${text}" is not a duration (use e.g. 250ms, 5s, 5m, 1h)`);
  return Math.round(Number(match[1]) * UNITS[match[2] ?? "ms"]!);
}

/**
 * Parses a retry schedule: the delays before each retry, comma-separated.
 * `5s,30s,5m,1h,24h` means attempts at 0, +5 s, +30 s, +5 min, +1 h, +24 h.
 */
export function parseRetrySchedule(text: string): number[] {
  const delays = text.split(",").map(parseDuration);
  if (delays.length > 20) throw new Error("at most 20 retries");
  return delays;
}
