import { parseBackoff } from "../lib/config/duration.ts";
import type { ClaimedDispatch } from "../lib/db/sql/claim-dispatches.ts";
import type { AttemptRecord, BreakerRule } from "../lib/db/sql/record-attempts.ts";
import { BREAKER } from "../lib/webhook/outbound/webhook-retry-policy.ts";

// What the database loops (claim-record-loop.ts, route-record-loop.ts) record: every attempt answered 200 at once.

const open = parseBackoff(BREAKER.open);

/** The circuit breaker as the lane judges it. */
export const BREAKER_RULE: BreakerRule = {
  threshold: BREAKER.threshold,
  openBaseMs: open.baseMs,
  openMaxMs: open.maxMs,
  connectionClasses: BREAKER.connectionClasses,
};

/** A successful attempt of each leased dispatch, as the deliver consumer would record it. */
export function succeeded(dispatches: readonly ClaimedDispatch[]): AttemptRecord[] {
  const now = new Date();
  return dispatches.map((d) => ({
    dispatchId: d.id,
    webhookId: d.webhookId,
    attempt: d.attempt,
    status: "success",
    retryInMs: null,
    startedAt: now,
    durationMs: 2,
    outcome: "success",
    statusCode: 200,
    errorClass: null,
    errorMessage: null,
    responseExcerpt: "ok",
    signature: { timestamp: Math.floor(now.getTime() / 1_000), scheme: d.scheme, signatures: 1 },
    probe: false,
    test: false,
  }));
}
