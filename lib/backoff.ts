/** An exponential backoff: `baseMs × 2^failures`, capped, with optional ±`jitter` (a fraction). */
export interface Backoff {
  baseMs: number;
  maxMs: number;
  jitter?: number;
}

/** The delay after `failures` failures in a row (0 for the first retry), per `policy`. */
export function backoffMs(policy: Backoff, failures: number, random: () => number = Math.random): number {
  const delay = Math.min(policy.maxMs, policy.baseMs * 2 ** Math.max(0, failures));
  const spread = policy.jitter ? delay * policy.jitter * (2 * random() - 1) : 0;
  return Math.round(Math.max(0, delay + spread));
}
