import { sql } from "drizzle-orm";
import type { Database } from "../client.ts";
import { claimedDispatch, type ClaimedDispatch, type ClaimedRow } from "./claim-dispatches.ts";

export interface ListenClaim {
  /** False once the session is deleted or expired: its stream should end. */
  listening: boolean;
  dispatches: ClaimedDispatch[];
  /** When its next dispatch can be leased (a retry falls due, a lease runs out), in ms; null when none waits. */
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
      select w.id, w.url, w.origin, w.scheme, w.headers, w.secret_sealed, w.previous_secret_sealed,
        w.previous_secret_expires_at
      from webhook w
      where w.id = ${webhookId} and w.status = 'listening' and w.expires_at > now()
    ),
    picked as (
      select o.dispatch_id from webhook_dispatch_open o
      where o.webhook_id = (select id from session)
        and o.next_attempt_at <= now() and (o.locked_until is null or o.locked_until < now())
      order by o.next_attempt_at
      limit greatest(0, ${options.maxInFlight}::int - (
        select count(*) from webhook_dispatch_open h
        where h.webhook_id = ${webhookId} and h.locked_until > now()))
      for update skip locked
    ),
    leased as (
      update webhook_dispatch_open o
      set locked_until = now() + ${options.leaseMs}::int * interval '1 millisecond', locked_by = ${options.workerId}
      from picked where o.dispatch_id = picked.dispatch_id
      returning o.dispatch_id, o.next_attempt_at
    )
    select
      exists (select 1 from session) as listening,
      coalesce((
        select jsonb_agg(jsonb_build_object(
          'id', d.id, 'eventId', d.event_id, 'eventType', d.event_type, 'webhookId', d.webhook_id,
          'account', d.account, 'payload', d.payload, 'attempt', d.attempt_count + 1, 'run', d.run, 'url', s.url,
          'origin', s.origin, 'scheme', s.scheme, 'headers', nullif(s.headers, '{}'::jsonb),
          'secretSealed', s.secret_sealed,
          'previousSecretSealed', s.previous_secret_sealed,
          'previousSecretExpiresAt', s.previous_secret_expires_at, 'probe', false, 'testMode', d.test_mode)
          order by l.next_attempt_at)
        from leased l join webhook_dispatch d on d.id = l.dispatch_id cross join session s), '[]'::jsonb)::text as rows,
      (select extract(epoch from min(greatest(o.next_attempt_at, o.locked_until)) - now()) * 1000
        from webhook_dispatch_open o
        where o.webhook_id = ${webhookId} and greatest(o.next_attempt_at, o.locked_until) > now()) as wait_ms
  `);
  const rows: ClaimedRow[] = typeof row!.rows === "string" ? JSON.parse(row!.rows) : row!.rows;
  return {
    listening: row!.listening,
    dispatches: rows.map(claimedDispatch),
    waitMs: row!.wait_ms === null ? null : Math.max(0, Math.ceil(Number(row!.wait_ms))),
  };
}
