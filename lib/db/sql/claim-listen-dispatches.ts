import { sql } from "drizzle-orm";
import type { Database } from "../client.ts";
import { claimedDispatch, type ClaimedDispatch, type ClaimedRow } from "./claim-dispatches.ts";

export interface ListenClaim {
  /** False once the session is deleted or expired: its stream should end. */
  listening: boolean;
  dispatches: ClaimedDispatch[];
  /** When its next retry falls due, in ms; null when none is scheduled. */
  waitMs: number | null;
}

/**
 * Leases the due dispatches of one listen session's webhook to `workerId`
 * (the stream pushing them to the session's CLI), at most `maxInFlight`
 * leased at once across every stream of the session. Only a webhook whose
 * status is `listening` and that has not expired is served; the lane's own
 * claim never takes one, so each attempt goes to exactly one stream.
 */
export async function claimListenDispatches(
  database: Database,
  options: { webhookId: string; workerId: string; maxInFlight: number; leaseMs: number },
): Promise<ListenClaim> {
  const { webhookId } = options;
  const [row] = await database.rows<{
    listening: boolean;
    rows: ClaimedRow[] | string;
    wait_ms: number | string | null;
  }>(sql`
    with session as (
      select w.id, w.url, w.origin, w.scheme, w.secret_sealed, w.previous_secret_sealed, w.previous_secret_expires_at
      from webhook w
      where w.id = ${webhookId} and w.status = 'listening' and w.expires_at > now()
    ),
    picked as (
      select d.id from webhook_dispatch d
      where d.webhook_id = (select id from session) and d.status in ('pending', 'error')
        and d.next_attempt_at <= now() and (d.locked_until is null or d.locked_until < now())
      order by d.next_attempt_at
      limit greatest(0, ${options.maxInFlight}::int - (
        select count(*) from webhook_dispatch h
        where h.webhook_id = ${webhookId} and h.status in ('pending', 'error') and h.locked_until > now()))
      for update skip locked
    ),
    leased as (
      update webhook_dispatch d
      set locked_until = now() + ${options.leaseMs}::int * interval '1 millisecond', locked_by = ${options.workerId}
      from picked where d.id = picked.id
      returning d.id, d.event_id, d.event_type, d.webhook_id, d.account, d.payload, d.attempt_count, d.test_mode,
        d.next_attempt_at
    )
    select
      exists (select 1 from session) as listening,
      coalesce((
        select jsonb_agg(jsonb_build_object(
          'id', l.id, 'eventId', l.event_id, 'eventType', l.event_type, 'webhookId', l.webhook_id,
          'account', l.account, 'payload', l.payload, 'attempt', l.attempt_count + 1, 'url', s.url,
          'origin', s.origin, 'scheme', s.scheme, 'secretSealed', s.secret_sealed,
          'previousSecretSealed', s.previous_secret_sealed,
          'previousSecretExpiresAt', s.previous_secret_expires_at, 'probe', false, 'testMode', l.test_mode)
          order by l.next_attempt_at)
        from leased l cross join session s), '[]'::jsonb)::text as rows,
      (select extract(epoch from min(d.next_attempt_at) - now()) * 1000 from webhook_dispatch d
        where d.webhook_id = ${webhookId} and d.status in ('pending', 'error') and d.next_attempt_at > now()) as wait_ms
  `);
  const rows: ClaimedRow[] = typeof row!.rows === "string" ? JSON.parse(row!.rows) : row!.rows;
  return {
    listening: row!.listening,
    dispatches: rows.map(claimedDispatch),
    waitMs: row!.wait_ms === null ? null : Math.max(0, Math.ceil(Number(row!.wait_ms))),
  };
}
