import { sql } from "drizzle-orm";
import type { Database } from "../client.ts";
import type { SignatureScheme } from "../schema.ts";

/** A dispatch leased to one worker, with what its attempt needs from the webhook. */
export interface ClaimedDispatch {
  id: string;
  eventId: string;
  eventType: string;
  webhookId: string;
  account: string | null;
  payload: string;
  /** The number of this attempt, 1-based. */
  attempt: number;
  url: string;
  scheme: SignatureScheme;
  secretSealed: string;
  previousSecretSealed: string | null;
  previousSecretExpiresAt: Date | null;
}

/**
 * Leases up to `limit` due dispatches of active webhooks with
 * `FOR UPDATE SKIP LOCKED`, so concurrent workers never claim the same row.
 * A lease that runs out (a worker died) makes the row claimable again: the
 * same attempt number is then sent again, which at-least-once allows.
 * `onlyIds` narrows the claim to rows a message named (push transports).
 */
export async function claimDispatches(
  database: Database,
  options: { workerId: string; limit: number; leaseMs: number; onlyIds?: readonly string[] },
): Promise<ClaimedDispatch[]> {
  const only = options.onlyIds
    ? sql`and d.id in (select jsonb_array_elements_text(${JSON.stringify(options.onlyIds)}::jsonb))`
    : sql``;
  const rows = await database.rows<Record<string, unknown>>(sql`
    with due as (
      select d.id
      from webhook_dispatch d
      where d.status in ('pending', 'error')
        and d.next_attempt_at <= now()
        and (d.locked_until is null or d.locked_until < now())
        and exists (select 1 from webhook w where w.id = d.webhook_id and w.status = 'active')
        ${only}
      order by d.next_attempt_at
      limit ${options.limit}
      for update of d skip locked
    )
    update webhook_dispatch d
    set locked_until = now() + ${options.leaseMs} * interval '1 millisecond',
        locked_by = ${options.workerId}
    from due, webhook w
    where d.id = due.id and w.id = d.webhook_id
    returning d.id, d.event_id, d.event_type, d.webhook_id, d.account, d.payload, d.attempt_count,
      w.url, w.scheme, w.secret_sealed, w.previous_secret_sealed, w.previous_secret_expires_at
  `);
  return rows.map((row) => ({
    id: row.id as string,
    eventId: row.event_id as string,
    eventType: row.event_type as string,
    webhookId: row.webhook_id as string,
    account: row.account as string | null,
    payload: row.payload as string,
    attempt: (row.attempt_count as number) + 1,
    url: row.url as string,
    scheme: row.scheme as SignatureScheme,
    secretSealed: row.secret_sealed as string,
    previousSecretSealed: row.previous_secret_sealed as string | null,
    previousSecretExpiresAt: row.previous_secret_expires_at ? new Date(row.previous_secret_expires_at as string) : null,
  }));
}
