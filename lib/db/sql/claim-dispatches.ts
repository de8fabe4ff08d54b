import { sql } from "drizzle-orm";
import type { Database } from "../client.ts";
import type { StoredHeaders } from "../../webhook/outbound/webhook-custom-headers.ts";
import type { SignatureScheme, TestMode } from "../schema.ts";

/** A dispatch leased to one worker, with what its attempt needs from the webhook. */
export interface ClaimedDispatch {
  id: string;
  eventId: string;
  eventType: string;
  webhookId: string;
  account: string | null;
  payload: string;
  /** The number of this attempt, 1-based, and of its run (a manual retry or a recovery starts a new one). */
  attempt: number;
  run: number;
  url: string;
  /** Scheme, host and port of `url`. */
  origin: string;
  scheme: SignatureScheme;
  /** The webhook's own headers (null or absent: none). */
  headers?: StoredHeaders | null;
  /** The webhook's owning account (null: a global webhook; absent from a claim older than this code). */
  owner?: string | null;
  /** standard-webhooks: also sign with the owner's ed25519 key (`v1a`). */
  asymmetric?: boolean;
  secretSealed: string;
  previousSecretSealed: string | null;
  previousSecretExpiresAt: Date | null;
  /** The one attempt a half-open circuit breaker lets through to find out whether the endpoint is back. */
  probe: boolean;
  /** A test event's test mode (see `TEST_MODES`); null for every other dispatch. */
  testMode: TestMode | null;
  /** Its webhook orders events per resource (`resource` ordering), and this one waited its turn. */
  ordered?: boolean;
  /** With tracing on where its event was published: the trace its claim and attempts continue (null or absent: none). */
  traceparent?: string | null;
}

/** Deliveries in flight at once, at most, across every worker. */
export interface InFlightCaps {
  perWebhook: number;
  perOrigin: number;
  /** Per owning account (global webhooks count as one account). */
  perAccount: number;
}

export interface ClaimOptions {
  workerId: string;
  limit: number;
  leaseMs: number;
  caps: InFlightCaps;
  /** The last webhook the previous claim visited: this one starts after it (round-robin). */
  after?: string;
  /** Claim only this dispatch, under the same rules (push transports); its keys are waited for, not tried. */
  onlyId?: string;
  /** Webhooks visited at most per claim. */
  maxSteps?: number;
  /** With rows held back by a cap, look again after this long at most (another worker may free a slot). */
  recheckMs?: number;
  /**
   * This worker's deliveries in flight now, per webhook id (attempts finished but not recorded are not in
   * flight): the claim counts them under the caps and writes them, with what it took, to this worker's row of
   * the in-flight book. A worker's claims must run one at a time, each after the last one's dispatches joined
   * `held`. Omitted: none, as for a worker that claims once (push transports).
   */
  held?: Readonly<Record<string, number>>;
}

export interface Claim {
  dispatches: ClaimedDispatch[];
  /** Where the next claim should start. */
  cursor: string;
  /** When to claim again: 0 now, a delay in ms, or null when nothing is scheduled at all. */
  waitMs: number | null;
  /** A webhook, origin or account another claim held at that moment was skipped: worth a look again soon. */
  contended: boolean;
}

/**
 * Leases due dispatches fairly (`hooklane_claim_dispatches`, lib/db/functions/):
 * webhooks with open rows take turns, each up to what its caps, its circuit
 * breaker and its rate limit allow right now; rows held back stay due. Claims
 * of different workers wait for each other only where they would take from
 * the same webhook, origin or account, and count every worker's deliveries in
 * flight there (`webhook_lane_in_flight`), so the caps hold across every
 * worker. A lease that runs out (a dead worker) makes the row claimable again
 * at the same attempt number, which at-least-once allows.
 */
export async function claimDispatches(database: Database, options: ClaimOptions): Promise<Claim> {
  const [row] = await database.rows<{ claim: string }>(
    sql`
    select hooklane_claim_dispatches(
      ${options.workerId}, ${options.limit}::int, ${options.leaseMs}::int, ${options.after ?? ""},
      ${options.onlyId ?? null}::text, ${options.caps.perWebhook}::int, ${options.caps.perOrigin}::int,
      ${options.caps.perAccount}::int, ${options.maxSteps ?? Math.max(64, options.limit * 4)}::int,
      ${options.recheckMs ?? 250}::int, ${JSON.stringify(options.held ?? {})}::jsonb
    )::text as claim
  `,
    "hooklane_claim",
  );
  return claimFrom(JSON.parse(row!.claim));
}

/** A claim as the claim statement returns it, in JSON: per webhook taken from, the webhook once and its rows. */
export interface RawClaim {
  groups: Array<{
    webhook: Pick<
      ClaimedRow,
      | "url"
      | "origin"
      | "scheme"
      | "headers"
      | "owner"
      | "asymmetric"
      | "secretSealed"
      | "previousSecretSealed"
      | "probe"
    > & {
      id: string;
      previousSecretExpiresAt: string | null;
    };
    rows: Array<
      Pick<
        ClaimedRow,
        | "id"
        | "eventId"
        | "eventType"
        | "account"
        | "payload"
        | "attempt"
        | "run"
        | "testMode"
        | "ordered"
        | "traceparent"
      >
    >;
  }>;
  cursor: string;
  waitMs: number | null;
  contended: boolean;
}

export const claimFrom = (claim: RawClaim): Claim => ({
  dispatches: claim.groups.flatMap(({ webhook: { id: webhookId, ...webhook }, rows }) =>
    rows.map((row) => claimedDispatch({ ...row, ...webhook, webhookId })),
  ),
  cursor: claim.cursor,
  waitMs: claim.waitMs === null ? null : Math.max(0, Math.ceil(claim.waitMs)),
  contended: claim.contended,
});

/** A leased row as a claim statement returns it, in JSON: its dates as text. */
export type ClaimedRow = Omit<ClaimedDispatch, "previousSecretExpiresAt"> & { previousSecretExpiresAt: string | null };

export const claimedDispatch = (row: ClaimedRow): ClaimedDispatch => ({
  ...row,
  previousSecretExpiresAt: row.previousSecretExpiresAt ? new Date(row.previousSecretExpiresAt) : null,
});

/**
 * Takes a worker's row out of the in-flight book: for a worker that claims once
 * (a push transport's invocation) after its attempt is recorded, and for one
 * that stops. Otherwise its row would count until its leases ran out.
 */
export async function forgetInFlight(database: Database, workerId: string): Promise<void> {
  await database.rows(sql`delete from webhook_lane_in_flight where worker = ${workerId}`);
}

/**
 * Writes this worker's row of the in-flight book as waiting at `webhookId`
 * for `ms`, with nothing in flight: a worker about to take the webhook's next
 * dispatch once its rate token is in. It counts against no cap; a message
 * held back meanwhile for that webhook is left to it. The worker's next claim
 * replaces or deletes the row.
 */
export async function markWaiting(database: Database, workerId: string, webhookId: string, ms: number): Promise<void> {
  await database.rows(sql`
    insert into webhook_lane_in_flight as b (worker, until, by_webhook, by_origin, by_account)
    values (${workerId}, now() + ${Math.ceil(ms)} * interval '1 millisecond',
      jsonb_build_object(${webhookId}::text, 0), '{}', '{}')
    on conflict (worker) do update
    set until = excluded.until, by_webhook = excluded.by_webhook, by_origin = '{}', by_account = '{}'
  `);
}

/**
 * Deletes the in-flight book rows whose workers stopped renewing them over a
 * minute ago (their leases ran out as long): they no longer count, and every
 * claim would read past them. Rows another statement holds are left for later.
 */
export async function forgetStoppedWorkers(database: Database): Promise<void> {
  await database.rows(sql`
    delete from webhook_lane_in_flight where worker in (
      select worker from webhook_lane_in_flight where until < now() - interval '1 minute'
      for update skip locked)
  `);
}
