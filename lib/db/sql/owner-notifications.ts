import { sql } from "drizzle-orm";
import type { Database } from "../client.ts";
import type { NotificationKind } from "../schema.ts";

/**
 * Folds exhausted-dispatch notifications into digests: for up to `limit`
 * webhooks whose oldest unfolded one is at least `windowMs` old at `now`, one
 * `dispatch.exhausted.digest` row with the window's total, and per event type
 * its count and up to five example resource ids; the window's rows point at it.
 * Rows after the window wait for the next digest. One statement, with the
 * rows locked (`SKIP LOCKED`), so sweepers running at once never fold a row
 * twice. Returns how many digests it wrote.
 */
export async function foldExhaustedDigests(
  database: Database,
  options: { now: Date; windowMs: number; limit: number },
): Promise<number> {
  const { now, windowMs, limit } = options;
  const at = sql`${now.toISOString()}::timestamptz`;
  const [row] = await database.rows<{ digests: number }>(sql`
    with due as (
      select n.webhook_id, min(n.created_at) as window_start
      from webhook_notification n
      where n.kind = 'dispatch.exhausted' and n.digest_id is null
      group by n.webhook_id
      having min(n.created_at) <= ${at} - ${windowMs} * interval '1 millisecond'
      order by min(n.created_at)
      limit ${limit}
    ),
    items as (
      select n.id, n.webhook_id, n.account, n.detail, n.created_at, due.window_start
      from webhook_notification n join due on due.webhook_id = n.webhook_id
      where n.kind = 'dispatch.exhausted' and n.digest_id is null
        and n.created_at < due.window_start + ${windowMs} * interval '1 millisecond'
      for update of n skip locked
    ),
    per_type as (
      select webhook_id, account, window_start, detail ->> 'eventType' as type, count(*)::int as n,
        (array_agg(detail ->> 'resourceId' order by created_at)
          filter (where detail ->> 'resourceId' is not null))[1:5] as examples
      from items group by webhook_id, account, window_start, detail ->> 'eventType'
    ),
    per_webhook as (
      select webhook_id, account, window_start, sum(n)::int as total,
        jsonb_agg(jsonb_build_object('type', type, 'count', n, 'examples', to_jsonb(coalesce(examples, '{}'::text[])))
          order by n desc, type) as types
      from per_type group by webhook_id, account, window_start
    ),
    digests as (
      insert into webhook_notification (webhook_id, account, kind, detail, next_mail_at)
      select webhook_id, account, 'dispatch.exhausted.digest',
        jsonb_build_object('total', total, 'types', types,
          'windowStart', window_start, 'windowEnd', window_start + ${windowMs} * interval '1 millisecond'),
        ${at}
      from per_webhook
      returning id, webhook_id
    ),
    folded as (
      update webhook_notification n set digest_id = d.id
      from items i join digests d on d.webhook_id = i.webhook_id
      where n.id = i.id
    )
    select count(*)::int as digests from digests
  `);
  return row?.digests ?? 0;
}

/** A notification due for its e-mail, with what the message needs. */
export interface DueMail {
  id: number;
  kind: NotificationKind;
  detail: Record<string, unknown>;
  webhookId: string;
  account: string | null;
  url: string;
  /** The owning account's address; null for a global webhook or an account without one. */
  email: string | null;
  /** Including this one. */
  attempts: number;
}

/**
 * Leases up to `limit` notifications whose e-mail is due at `now`: pushes
 * `next_mail_at` a lease ahead and counts the attempt, so another sweeper
 * skips them and a sweeper that dies mid-send leaves them to be tried again.
 */
export async function claimDueMails(
  database: Database,
  options: { now: Date; leaseMs: number; limit: number },
): Promise<DueMail[]> {
  const at = sql`${options.now.toISOString()}::timestamptz`;
  const rows = await database.rows<{
    id: number | string;
    kind: NotificationKind;
    detail: Record<string, unknown>;
    webhook_id: string;
    account: string | null;
    url: string;
    email: string | null;
    mail_attempts: number;
  }>(sql`
    with due as (
      select id from webhook_notification
      where mail_status = 'pending' and next_mail_at <= ${at}
      order by next_mail_at
      limit ${options.limit}
      for update skip locked
    )
    update webhook_notification n
    set next_mail_at = ${at} + ${options.leaseMs} * interval '1 millisecond', mail_attempts = n.mail_attempts + 1
    from due
    where n.id = due.id
    returning n.id, n.kind, n.detail, n.webhook_id, n.account, n.mail_attempts,
      (select w.url from webhook w where w.id = n.webhook_id) as url,
      (select a.email from account a where a.id = n.account) as email
  `);
  return rows.map((row) => ({
    id: Number(row.id),
    kind: row.kind,
    detail: row.detail,
    webhookId: row.webhook_id,
    account: row.account,
    url: row.url,
    email: row.email,
    attempts: row.mail_attempts,
  }));
}

/** Records how a notification's e-mail went: `sent`, `none` (nobody to mail), or failed — retried at `retryAt`, or `failed` for good without one. */
export async function settleMail(
  database: Database,
  id: number,
  outcome: { status: "sent" | "none"; at: Date } | { status: "failed"; error: string; retryAt: Date | null },
): Promise<void> {
  if (outcome.status === "failed") {
    await database.rows(sql`
      update webhook_notification
      set mail_status = ${outcome.retryAt ? "pending" : "failed"}, mail_error = ${outcome.error.slice(0, 1_000)},
        next_mail_at = coalesce(${outcome.retryAt?.toISOString() ?? null}::timestamptz, next_mail_at)
      where id = ${id}
    `);
    return;
  }
  await database.rows(sql`
    update webhook_notification
    set mail_status = ${outcome.status}, mailed_at = ${outcome.status === "sent" ? outcome.at.toISOString() : null}::timestamptz,
      mail_error = null
    where id = ${id}
  `);
}
