import { sql } from "drizzle-orm";
import type { Database } from "../client.ts";
import { TEST_EVENT_TYPE, type SignatureScheme, type TestMode } from "../schema.ts";

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
  /** Scheme, host and port of `url`. */
  origin: string;
  scheme: SignatureScheme;
  secretSealed: string;
  previousSecretSealed: string | null;
  previousSecretExpiresAt: Date | null;
  /** The one attempt a half-open circuit breaker lets through to find out whether the endpoint is back. */
  probe: boolean;
  /** A test event's test mode (see `TEST_MODES`); null for every other dispatch. */
  testMode: TestMode | null;
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
  /** Claim only this dispatch, under the same rules (push transports). */
  onlyId?: string;
  /** Webhooks visited at most per claim. */
  maxSteps?: number;
  /** With rows held back by a cap, look again after this long at most (another worker may free a slot). */
  recheckMs?: number;
  /**
   * This worker's deliveries in flight now, per webhook id (attempts finished but not recorded are not in
   * flight). The claim counts them with every other worker's book row, and writes this worker's row back with
   * what it took (migration 0019). Omitted: none, as for a worker that claims once (push transports).
   */
  held?: Readonly<Record<string, number>>;
  /**
   * This claim's number, rising per worker, and the numbers of the worker's claims still in flight when it was
   * sent: what those took is not in `held` yet, and the book counts it (migration 0020). Omitted: 1 and none.
   */
  claim?: number;
  pending?: readonly number[];
}

export interface Claim {
  dispatches: ClaimedDispatch[];
  /** Where the next claim should start. */
  cursor: string;
  /** When to claim again: 0 now, a delay in ms, or null when nothing is scheduled at all. */
  waitMs: number | null;
}

/**
 * Leases due dispatches fairly (`hooklane_claim_dispatches`, migrations
 * 0003, 0004, 0012, 0014, 0015, 0019, 0020 and 0021): webhooks with open rows take turns, each up to what its caps, its
 * circuit breaker and its rate limit allow right now; rows held back stay
 * pending. Claims are serialised by the database and count every worker's
 * deliveries in flight (`webhook_lane_in_flight`), so the caps hold across
 * every worker. A lease that runs out (a dead worker) makes the row
 * claimable again at the same attempt number, which at-least-once allows.
 */
export async function claimDispatches(database: Database, options: ClaimOptions): Promise<Claim> {
  const [row] = await database.rows<{ claim: string | RawClaim }>(
    sql`
    select hooklane_claim_dispatches(
      ${options.workerId}, ${options.limit}::int, ${options.leaseMs}::int, ${options.after ?? ""},
      ${options.onlyId ?? null}::text, ${options.caps.perWebhook}::int, ${options.caps.perOrigin}::int,
      ${options.caps.perAccount}::int, ${options.maxSteps ?? Math.max(64, options.limit * 4)}::int,
      ${options.recheckMs ?? 250}::int, ${JSON.stringify(options.held ?? {})}::jsonb, ${options.claim ?? 1}::bigint,
      ${`{${(options.pending ?? []).join(",")}}`}::bigint[], null::text[]
    )::text as claim
  `,
    "hooklane_claim",
  );
  const claim: RawClaim = typeof row!.claim === "string" ? JSON.parse(row!.claim) : row!.claim;
  const modes = await testModes(
    database,
    claim.rows.filter((d) => d.eventType === TEST_EVENT_TYPE).map((d) => d.id),
  );
  return {
    dispatches: claim.rows.map((d) => claimedDispatch({ ...d, testMode: modes.get(d.id) ?? null })),
    cursor: claim.cursor,
    waitMs: claim.waitMs === null ? null : Math.max(0, Math.ceil(claim.waitMs)),
  };
}

/**
 * The test modes of claimed test events. Only `webhook.test` dispatches can
 * have one, and they are rare, so they are read here rather than widening
 * every row the claim function returns.
 */
async function testModes(database: Database, ids: string[]): Promise<Map<string, TestMode>> {
  if (ids.length === 0) return new Map();
  const rows = await database.rows<{ id: string; test_mode: TestMode | null }>(sql`
    select id, test_mode from webhook_dispatch
    where id in (select jsonb_array_elements_text(${JSON.stringify(ids)}::jsonb)) and test_mode is not null
  `);
  return new Map(rows.map((row) => [row.id, row.test_mode!]));
}

/** A leased row as a claim statement returns it, in JSON: its dates as text. */
export type ClaimedRow = Omit<ClaimedDispatch, "previousSecretExpiresAt"> & { previousSecretExpiresAt: string | null };

export const claimedDispatch = (row: ClaimedRow): ClaimedDispatch => ({
  ...row,
  previousSecretExpiresAt: row.previousSecretExpiresAt ? new Date(row.previousSecretExpiresAt) : null,
});

interface RawClaim {
  rows: Array<Omit<ClaimedRow, "testMode">>;
  cursor: string;
  waitMs: number | null;
}

/**
 * Takes a worker's row out of the in-flight book: for a worker that claims once
 * (a push transport's invocation) after its attempt is recorded, and for one
 * that stops. Otherwise its row would count until its leases ran out.
 */
export async function forgetInFlight(database: Database, workerId: string): Promise<void> {
  await database.rows(sql`delete from webhook_lane_in_flight where worker = ${workerId}`);
}
