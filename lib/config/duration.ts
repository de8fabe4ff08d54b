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

/** Parses a backoff as `<first>,<longest>`, e.g. `5s,5m`: the first delay, doubling up to the longest. */
export function parseBackoff(text: string): { baseMs: number; maxMs: number } {
  const parts = text.split(",").map(parseDuration);
  if (parts.length !== 2 || parts[0]! <= 0 || parts[1]! < parts[0]!) {
    throw new Error(`"${text}" is not a backoff (use <first>,<longest>, e.g. 5s,5m)`);
  }
  return { baseMs: parts[0]!, maxMs: parts[1]! };
}
