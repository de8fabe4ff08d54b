import { sql } from "drizzle-orm";
import type { Database } from "../client.ts";
import { safeText } from "../safe-text.ts";
import type { AttemptOutcome, DispatchStatus, SignatureManifest } from "../schema.ts";

/** What one attempt did, and what the dispatch becomes. */
export interface AttemptRecord {
  dispatchId: string;
  webhookId: string;
  attempt: number;
  status: DispatchStatus;
  /** For `error`: the delay before the next attempt, counted from when this is recorded. */
  retryInMs: number | null;
  startedAt: Date;
  durationMs: number;
  outcome: AttemptOutcome;
  statusCode: number | null;
  errorClass: string | null;
  errorMessage: string | null;
  responseExcerpt: string | null;
  signature: SignatureManifest;
  /** This attempt was a half-open circuit breaker's probe. */
  probe: boolean;
  /** A `webhook.test` event's: it counts toward no endpoint health, breaker, auto-disable or notification. */
  test: boolean;
}

/** How the circuit breaker is judged, from `BREAKER`. */
export interface BreakerRule {
  threshold: number;
  openBaseMs: number;
  openMaxMs: number;
  connectionClasses: readonly string[];
}

/** A breaker this batch opened (or re-opened after a failed probe). */
export interface OpenedBreaker {
  webhookId: string;
  failures: number;
  openForMs: number;
}

/**
 * Records a batch of attempts in one statement (`hooklane_record_attempts`,
 * lib/db/functions/): for each dispatch `workerId` still leases, its open
 * row leaves (finished) or waits, unleased, for the retry; its ledger row
 * takes the outcome; its attempt is appended. It keeps each webhook's health
 * (`webhook_health`, `webhook_health_hour`) and the lane's throughput
 * (`webhook_lane_minute`), and updates each webhook's circuit breaker: any
 * HTTP answer closes it; connection-level failures count, and at the
 * threshold it opens for a backoff that doubles with each consecutive
 * opening. The next attempt's time is computed from the database clock at
 * recording time, so a retry can come later than planned but never earlier.
 * A dispatch exhausted here gets its owner's `dispatch.exhausted`
 * notification in the same statement. A test event's attempt is recorded in
 * its ledger and the lane's throughput only: never in health, breaker or
 * notifications. Text from outside is made safe for
 * PostgreSQL first.
 */
export async function recordAttempts(
  database: Database,
  workerId: string,
  records: readonly AttemptRecord[],
  breaker: BreakerRule,
): Promise<OpenedBreaker[]> {
  if (records.length === 0) return [];
  const json = JSON.stringify(
    records.map((r) => ({
      id: r.dispatchId,
      webhook_id: r.webhookId,
      attempt: r.attempt,
      status: r.status,
      retry_in_ms: r.retryInMs,
      started_at: r.startedAt.toISOString(),
      duration_ms: r.durationMs,
      outcome: r.outcome,
      status_code: r.statusCode,
      error_class: r.errorClass,
      error_message: safeText(r.errorMessage),
      response_excerpt: safeText(r.responseExcerpt),
      signature: r.signature,
      probe: r.probe,
      test: r.test,
    })),
  );
  return (
    await database.rows<{ webhook_id: string; failures: number; open_for_ms: number | string }>(
      sql`
        select webhook_id, failures, open_for_ms from hooklane_record_attempts(
          ${workerId}, ${json}::jsonb, ${breaker.threshold}::int, ${breaker.openBaseMs}::float8,
          ${breaker.openMaxMs}::float8,
          array(select jsonb_array_elements_text(${JSON.stringify(breaker.connectionClasses)}::jsonb)))
      `,
      // The same text every call (every value is a parameter): parsed once per connection, not per batch.
      "hooklane_record_attempts",
    )
  ).map((row) => ({ webhookId: row.webhook_id, failures: row.failures, openForMs: Number(row.open_for_ms) }));
}
