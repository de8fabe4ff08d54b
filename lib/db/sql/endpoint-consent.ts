import { sql } from "drizzle-orm";
import type { Database } from "../client.ts";
import { safeText } from "../safe-text.ts";
import type { ConsentState, SignatureScheme, Webhook } from "../schema.ts";
import type { StoredHeaders } from "../../webhook/outbound/webhook-custom-headers.ts";

/** No two consent requests to one webhook's endpoint within this, however they are asked for. */
export const CONSENT_MIN_INTERVAL_S = 10;

/** A webhook's consent columns, as a new URL (or a new webhook) starts them. */
export type ConsentColumns = Pick<
  Webhook,
  "consentState" | "consentRequestedAt" | "consentGrantedAt" | "consentAttempts" | "consentError" | "consentNextAt"
>;

const NOT_ASKED: ConsentColumns = {
  consentState: null,
  consentRequestedAt: null,
  consentGrantedAt: null,
  consentAttempts: 0,
  consentError: null,
  consentNextAt: null,
};

/**
 * Where consent starts for a webhook of `account` aimed at `url`: none is asked of a global webhook (null account) or
 * of an account that does not require it (`account.endpoint_consent`; an account with no row yet takes
 * `newAccounts`, the default for new ones); granted at once when another live webhook of the same account already
 * has this URL's consent; otherwise pending, its first request due now.
 */
export async function consentForUrl(
  database: Database,
  options: { account: string | null; url: string; newAccounts: boolean; exceptWebhook?: string },
): Promise<ConsentColumns> {
  if (options.account === null) return NOT_ASKED;
  // The database's clock, not this process's: a sweeper woken by the commit finds the request due.
  const [row] = await database.rows<{ required: boolean; granted: boolean; now: Date | string }>(sql`
    select now() as now,
      coalesce((select a.endpoint_consent from account a where a.id = ${options.account}), ${options.newAccounts}) as required,
      exists (
        select 1 from webhook w
        where w.account = ${options.account} and w.url = ${options.url} and w.consent_state = 'granted'
          and w.deleted_at is null and w.id <> ${options.exceptWebhook ?? ""}) as granted
  `);
  if (!row?.required) return NOT_ASKED;
  const now = new Date(row.now);
  if (row.granted) return { ...NOT_ASKED, consentState: "granted", consentRequestedAt: now, consentGrantedAt: now };
  return { ...NOT_ASKED, consentState: "pending", consentRequestedAt: now, consentNextAt: now };
}

/** What a consent request is made of: the webhook's URL, scheme, secrets and headers, as the lane signs with them. */
export interface ConsentSubject {
  id: string;
  account: string | null;
  url: string;
  scheme: SignatureScheme;
  headers: StoredHeaders;
  secretSealed: string;
  previousSecretSealed: string | null;
  previousSecretExpiresAt: Date | null;
  asymmetricSignature: boolean;
  /** Requests sent for this URL before this one. */
  attempts: number;
}

interface SubjectRow {
  id: string;
  account: string | null;
  url: string;
  scheme: SignatureScheme;
  headers: StoredHeaders;
  secret_sealed: string;
  previous_secret_sealed: string | null;
  previous_secret_expires_at: Date | string | null;
  asymmetric_signature: boolean;
  consent_attempts: number;
}

const SUBJECT = sql`w.id, w.account, w.url, w.scheme, w.headers, w.secret_sealed, w.previous_secret_sealed,
  w.previous_secret_expires_at, w.asymmetric_signature, w.consent_attempts`;

function toSubject(row: SubjectRow): ConsentSubject {
  return {
    id: row.id,
    account: row.account,
    url: row.url,
    scheme: row.scheme,
    headers: row.headers,
    secretSealed: row.secret_sealed,
    previousSecretSealed: row.previous_secret_sealed,
    previousSecretExpiresAt: row.previous_secret_expires_at === null ? null : new Date(row.previous_secret_expires_at),
    asymmetricSignature: row.asymmetric_signature,
    attempts: Number(row.consent_attempts),
  };
}

/**
 * Takes up to `limit` webhooks whose consent request is due and holds them for `leaseMs` (their next request moved
 * that far, and its last request stamped now, so that an owner's ask waits its turn), so that concurrent sweepers
 * ask each endpoint once; one that dies leaves them to the next after that.
 * FOR NO KEY UPDATE: routing, inserting the webhook's dispatches, holds its key share, which FOR UPDATE would wait
 * for (or skip).
 */
export async function takeDueConsentRequests(
  database: Database,
  options: { limit: number; leaseMs: number },
): Promise<ConsentSubject[]> {
  const rows = await database.rows<SubjectRow>(sql`
    update webhook w set consent_next_at = now() + ${options.leaseMs} * interval '1 millisecond', consent_sent_at = now()
    where w.id in (
      select d.id from webhook d
      where d.consent_state = 'pending' and d.consent_next_at <= now() and d.deleted_at is null
      order by d.consent_next_at
      limit ${options.limit}
      for no key update skip locked)
    returning ${SUBJECT}
  `);
  return rows.map(toSubject);
}

/**
 * Takes one webhook's consent request now (asked for by its owner), counted like the schedule's: once the schedule
 * has run out, asking does not start it again. Undefined when its
 * consent is not pending; `{ retryInSeconds }` when a request went to it within CONSENT_MIN_INTERVAL_S.
 */
export async function takeConsentRequest(
  database: Database,
  options: { webhookId: string; leaseMs: number },
): Promise<ConsentSubject | { retryInSeconds: number } | undefined> {
  const pending = sql`w.id = ${options.webhookId} and w.consent_state = 'pending' and w.deleted_at is null`;
  const [taken] = await database.rows<SubjectRow>(sql`
    update webhook w set consent_next_at = now() + ${options.leaseMs} * interval '1 millisecond', consent_sent_at = now()
    where ${pending}
      and (w.consent_sent_at is null or w.consent_sent_at <= now() - ${CONSENT_MIN_INTERVAL_S} * interval '1 second')
    returning ${SUBJECT}
  `);
  if (taken) return toSubject(taken);
  // Not taken: not pending, or asked moments ago (and when it may be asked again).
  const [recent] = await database.rows<{ wait_s: number | string }>(sql`
    select ceil(extract(epoch from w.consent_sent_at + ${CONSENT_MIN_INTERVAL_S} * interval '1 second' - now()))::float8
      as wait_s
    from webhook w where ${pending} and w.consent_sent_at is not null
  `);
  return recent ? { retryInSeconds: Math.max(1, Number(recent.wait_s)) } : undefined;
}

/**
 * Records what the endpoint answered a consent request sent to `url` at `sentAt`: granted, or why not (text of the
 * endpoint's, made safe to store) and when the next request is due (null: none on its own). Kept only while the webhook still points there and is pending (a new
 * URL or a released account meanwhile makes it moot). Returns the state it left, undefined when moot.
 */
export async function recordConsentAnswer(
  database: Database,
  answer: { webhookId: string; url: string; sentAt: Date; granted: boolean; error: string | null; nextAt: Date | null },
): Promise<ConsentState | undefined> {
  const [row] = await database.rows<{ consent_state: ConsentState }>(sql`
    update webhook w
    set consent_state = case when ${answer.granted} then 'granted' else w.consent_state end,
        consent_granted_at = case when ${answer.granted} then now() else w.consent_granted_at end,
        consent_attempts = w.consent_attempts + 1,
        consent_sent_at = ${answer.sentAt},
        consent_error = ${safeText(answer.error)?.slice(0, 1_000) ?? null},
        consent_next_at = ${answer.granted ? null : answer.nextAt},
        updated_at = now()
    where w.id = ${answer.webhookId} and w.url = ${answer.url} and w.consent_state = 'pending'
    returning w.consent_state
  `);
  return row?.consent_state;
}

/**
 * An account no longer requires consent: its webhooks waiting for it are sent to as any other (their consent is no
 * longer asked). Returns how many were waiting.
 */
export async function releaseAccountConsent(database: Database, account: string): Promise<number> {
  const rows = await database.rows<{ id: string }>(sql`
    update webhook w
    set consent_state = null, consent_next_at = null, updated_at = now()
    where w.account = ${account} and w.consent_state = 'pending'
    returning w.id
  `);
  return rows.length;
}
