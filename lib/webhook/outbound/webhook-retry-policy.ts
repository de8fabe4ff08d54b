import type { Backoff } from "../../backoff.ts";

/**
 * RETRY: the delivery schedule subscribers are promised, applied by every
 * transport. The schedule lists the delay before each retry; attempt 1 is
 * immediate, so five delays mean six attempts.
 */
export const RETRY = {
  /** 5 s, 30 s, 5 min, 1 h, 24 h: six attempts over ~25 h (`WEBHOOK_RETRY_SCHEDULE` overrides it). */
  defaultSchedule: "5s,30s,5m,1h,24h",
  jitter: 0.1,
  retryAfterCapMs: 86_400_000,
} as const;

/**
 * The lane's own backoffs, beside the subscribers' schedule: none of them is
 * promised to anyone, but every loop and queue message follows one of these.
 */
export const LANE_BACKOFF = {
  /** A route job that failed for a reason other than poison (the database, a resolver). */
  routeJob: { baseMs: 1_000, maxMs: 300_000 },
  /** A queue message whose handling threw (Vercel Queues redelivery). */
  queueMessage: { baseMs: 5_000, maxMs: 300_000 },
  /** A consumer loop whose step failed (the database down), so it does not spin. */
  loop: { baseMs: 100, maxMs: 5_000, jitter: 0.2 },
} as const satisfies Record<string, Backoff>;

/**
 * The endpoint circuit breaker: after `threshold` connection-level failures
 * in a row (refused, DNS, TLS, timeout, reset) the webhook's due dispatches
 * wait, unattempted, for `open` (doubling each time it opens again); then
 * one probe attempt goes through. Any HTTP answer closes it.
 */
export const BREAKER = {
  /** `WEBHOOK_BREAKER_THRESHOLD` overrides it. */
  threshold: 5,
  /** 5 s, doubling to 5 min (`WEBHOOK_BREAKER_OPEN` overrides it, e.g. `200ms,2s` in tests). */
  open: "5s,5m",
  /** Error classes that count against an endpoint's reachability. */
  connectionClasses: ["connection_refused", "connection_reset", "dns", "tls", "timeout", "network"],
} as const;

/** An attempt that could not even be made (a secret that will not unseal, a bug): looked at again in a minute. */
export const INTERNAL_RETRY_MS = 60_000;

export type RetryDecision = { kind: "retry"; delayMs: number } | { kind: "exhausted" };

/**
 * Decides what follows failed attempt number `attempt` (1-based): the delay
 * before the next attempt, with ±10 % jitter and never shorter than
 * `Retry-After` (capped at 24 h), or exhaustion once the schedule is spent.
 * The delay is counted from when the failure is recorded, so it can only grow.
 */
export function decideRetry(input: {
  attempt: number;
  schedule: readonly number[];
  retryAfterMs?: number | undefined;
  random?: () => number;
}): RetryDecision {
  const delay = input.schedule[input.attempt - 1];
  if (delay === undefined) return { kind: "exhausted" };
  const random = input.random ?? Math.random;
  const jittered = delay * (1 + RETRY.jitter * (2 * random() - 1));
  const floor = Math.min(input.retryAfterMs ?? 0, RETRY.retryAfterCapMs);
  return { kind: "retry", delayMs: Math.round(Math.max(jittered, floor)) };
}

/**
 * Parses `Retry-After` as delay-seconds or an HTTP date. Returns milliseconds
 * from `now`, or undefined when absent or unreadable.
 */
export function parseRetryAfter(value: string | undefined, now: number): number | undefined {
  if (!value) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1_000;
  const date = Date.parse(trimmed);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - now);
}
