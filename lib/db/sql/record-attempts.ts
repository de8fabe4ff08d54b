import { sql } from "drizzle-orm";
import type { Database } from "../client.ts";
import type { AttemptOutcome, DispatchStatus, SignatureManifest } from "../schema.ts";

/** What one attempt did, and what the dispatch becomes. */
export interface AttemptRecord {
  dispatchId: string;
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
}

/**
 * Records a batch of attempts and completes their dispatches in one
 * statement, releasing the leases `workerId` held. The next attempt's time is
 * computed from the database clock at recording time, so a retry can come
 * later than planned but never earlier.
 */
export async function recordAttempts(
  database: Database,
  workerId: string,
  records: readonly AttemptRecord[],
): Promise<void> {
  if (records.length === 0) return;
  const json = JSON.stringify(
    records.map((r) => ({
      id: r.dispatchId,
      attempt: r.attempt,
      status: r.status,
      retry_in_ms: r.retryInMs,
      started_at: r.startedAt.toISOString(),
      duration_ms: r.durationMs,
      outcome: r.outcome,
      status_code: r.statusCode,
      error_class: r.errorClass,
      error_message: r.errorMessage,
      response_excerpt: r.responseExcerpt,
      signature: r.signature,
    })),
  );
  await database.rows(sql`
    with r as (
      select r.*, case when r.retry_in_ms is null then null
                       else now() + r.retry_in_ms * interval '1 millisecond' end as next_at
      from jsonb_to_recordset(${json}::jsonb) as r(
        id text, attempt int, status text, retry_in_ms bigint, started_at timestamptz, duration_ms int,
        outcome text, status_code int, error_class text, error_message text, response_excerpt text, signature jsonb)
    ),
    completed as (
      update webhook_dispatch d
      set status = r.status,
          attempt_count = r.attempt,
          next_attempt_at = coalesce(r.next_at, d.next_attempt_at),
          locked_until = null,
          locked_by = null,
          last_status_code = r.status_code,
          last_error = case when r.outcome = 'success' then null
                            else concat_ws(': ', r.error_class, r.error_message) end,
          updated_at = now(),
          completed_at = case when r.status in ('success', 'exhausted') then now() end
      from r
      where d.id = r.id and d.locked_by = ${workerId}
      returning d.id
    )
    -- The attempt belongs to the dispatch's current run; a dispatch deleted
    -- meanwhile (its webhook was) leaves nothing to record.
    insert into webhook_attempt (dispatch_id, run, attempt, started_at, duration_ms, outcome, status_code,
      error_class, error_message, response_excerpt, signature, worker, next_attempt_at)
    select r.id, d.run, r.attempt, r.started_at, r.duration_ms, r.outcome, r.status_code,
      r.error_class, r.error_message, r.response_excerpt, r.signature, ${workerId}, r.next_at
    from r join webhook_dispatch d on d.id = r.id
    on conflict (dispatch_id, run, attempt) do nothing
  `);
}
