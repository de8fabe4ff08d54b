import type { Database } from "../../db/client.ts";
import type { Webhook } from "../../db/schema.ts";
import { readEndpointHealth } from "../../db/sql/endpoint-health.ts";
import { histogramOf, histogramPercentile } from "../../db/sql/latency-histogram.ts";

/** Failed attempts in a row from which an endpoint reads as failing, whatever its day looked like. */
export const FAILING_AFTER = 5;
/** Below this share of successful attempts over the window, an endpoint reads as degraded. */
export const DEGRADED_BELOW = 0.95;

export type EndpointVerdict = "healthy" | "degraded" | "failing" | "idle";
export type BreakerState = "closed" | "open" | "half-open";

/** How one webhook's deliveries are going, as its owner sees it. */
export interface WebhookHealth {
  /**
   * `failing`: the breaker is not closed, FAILING_AFTER attempts failed in a
   * row, or nothing succeeded in the window; `degraded`: the last attempt
   * failed or fewer than DEGRADED_BELOW succeeded; `idle`: no attempt in the
   * window; `healthy` otherwise.
   */
  verdict: EndpointVerdict;
  /** The window's start (the hour 24 hours ago) and what it holds. */
  since: Date;
  attempts: number;
  succeeded: number;
  /** succeeded / attempts; null without attempts. */
  successRate: number | null;
  /** Attempt durations, ms, within 7 % (see LATENCY_BUCKETS); null without attempts. */
  latencyMs: { p50: number; p95: number } | null;
  failuresInARow: number;
  lastAttemptAt: Date | null;
  lastSuccessAt: Date | null;
  lastFailureAt: Date | null;
  /** `<error class>: <message>` of the last failed attempt. */
  lastError: string | null;
  lastStatusCode: number | null;
  /** Open dispatches: waiting their first attempt, waiting a retry, and being attempted now. */
  backlog: { pending: number; error: number; inFlight: number };
  /** When the next attempt is due; null when nothing waits, or the webhook is paused or disabled. */
  nextAttemptAt: Date | null;
  breaker: { state: BreakerState; failures: number; openUntil: Date | null };
}

/**
 * A webhook's delivery health over the last 24 hours, from the rollups the
 * lane keeps as it records attempts, the webhook's breaker, and its open
 * dispatches on the due index: never a scan of the attempt log.
 */
export async function webhookHealth(database: Database, hook: Webhook): Promise<WebhookHealth> {
  const rows = await readEndpointHealth(database, hook.id);
  const attempts = rows.buckets.reduce((sum, b) => sum + b.attempts, 0);
  const succeeded = rows.buckets.reduce((sum, b) => sum + b.succeeded, 0);
  const histogram = histogramOf(rows.buckets);
  const p50 = histogramPercentile(histogram, 0.5);
  const p95 = histogramPercentile(histogram, 0.95);
  const breaker = breakerOf(hook, rows.now);
  const failuresInARow = rows.state?.failuresInARow ?? 0;
  const successRate = attempts === 0 ? null : succeeded / attempts;

  let nextAttemptAt = hook.status === "active" && hook.consentState !== "pending" ? rows.nextDueAt : null;
  if (nextAttemptAt && breaker.openUntil && breaker.openUntil > nextAttemptAt) nextAttemptAt = breaker.openUntil;

  return {
    verdict: verdictOf({ breaker: breaker.state, failuresInARow, attempts, succeeded }),
    since: rows.since,
    attempts,
    succeeded,
    successRate,
    latencyMs: p50 === undefined || p95 === undefined ? null : { p50, p95 },
    failuresInARow,
    lastAttemptAt: rows.state?.lastAttemptAt ?? null,
    lastSuccessAt: rows.state?.lastSuccessAt ?? null,
    lastFailureAt: rows.state?.lastFailureAt ?? null,
    lastError: rows.state?.lastError ?? null,
    lastStatusCode: rows.state?.lastStatusCode ?? null,
    backlog: { pending: rows.pending, error: rows.error, inFlight: rows.inFlight },
    nextAttemptAt,
    breaker,
  };
}

function breakerOf(hook: Webhook, now: Date): WebhookHealth["breaker"] {
  const openUntil = hook.breakerOpenUntil;
  const state: BreakerState = openUntil === null ? "closed" : openUntil > now ? "open" : "half-open";
  return { state, failures: hook.breakerFailures, openUntil };
}

/** The one-word reading of an endpoint's health (see WebhookHealth.verdict). */
export function verdictOf(facts: {
  breaker: BreakerState;
  failuresInARow: number;
  attempts: number;
  succeeded: number;
}): EndpointVerdict {
  if (facts.breaker !== "closed" || facts.failuresInARow >= FAILING_AFTER) return "failing";
  if (facts.attempts === 0) return "idle";
  if (facts.succeeded === 0) return "failing";
  if (facts.failuresInARow > 0 || facts.succeeded / facts.attempts < DEGRADED_BELOW) return "degraded";
  return "healthy";
}
