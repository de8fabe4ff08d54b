import { sql } from "drizzle-orm";
import type { Database } from "../client.ts";
import { claimFrom, type Claim, type InFlightCaps, type RawClaim } from "./claim-dispatches.ts";
import type { ClaimedRouteJob } from "./route-jobs.ts";

export interface RouteAndClaimOptions {
  workerId: string;
  /** Route jobs taken at most. */
  routeLimit: number;
  /** The lease on the jobs handed back to the shared consumer. */
  routeLeaseMs: number;
  /** Event type → its `RouteRule`, as JSON: the catalogue's routing, read once per process. */
  rulesJson: string;
  /** Dispatches claimed at most (the worker's free slots); 0 claims none. */
  claimLimit: number;
  /** The dispatch lease. */
  leaseMs: number;
  caps: InFlightCaps;
  /** Where the claim starts, and what this worker has in flight, as for `claimDispatches`. */
  after: string;
  held: Readonly<Record<string, number>>;
}

export interface RoutedAndClaimed {
  /** Due route jobs this step took (routed here or handed back). */
  found: number;
  /** Dispatches each routed job created (a redelivered one: 0). */
  routed: number[];
  /** Dispatches created in all. */
  dispatches: number;
  /** The claim's answer; undefined when the step claimed nothing (`claimLimit` 0). */
  claim: Claim | undefined;
  /** Jobs not routed here (a malformed message, an unknown type): leased, for the shared consumer. */
  left: ClaimedRouteJob[];
  /** Milliseconds until the next route job no lease holds is due (≤ 0: now), or null when none waits. */
  dueMs: number | null;
  /** Routed jobs whose events carry a trace: its `traceparent`, the event type, and the dispatches it made. */
  traced: Array<{ traceparent: string; type: string; dispatches: number }>;
}

/**
 * The postgres lane's step in one statement (`hooklane_route_and_claim`,
 * lib/db/functions/): routes up to `routeLimit` due route jobs — each
 * event's dispatches inserted pending, its job deleted — and then claims up
 * to `claimLimit` due dispatches for this worker, the new ones among the
 * rest, under the claim's rules. All in one transaction: if the worker dies
 * after the commit, its leases run out and any worker claims the rows again.
 */
export async function routeAndClaim(database: Database, options: RouteAndClaimOptions): Promise<RoutedAndClaimed> {
  const [row] = await database.rows<{ step: string }>(
    sql`
    select hooklane_route_and_claim(
      ${options.workerId}, ${options.routeLimit}::int, ${options.routeLeaseMs}::int, ${options.rulesJson}::jsonb,
      ${options.claimLimit}::int, ${options.leaseMs}::int, ${options.caps.perWebhook}::int,
      ${options.caps.perOrigin}::int, ${options.caps.perAccount}::int, ${options.after},
      ${JSON.stringify(options.held)}::jsonb
    )::text as step
  `,
    "hooklane_route_and_claim",
  );
  const raw: RawStep = JSON.parse(row!.step);
  return {
    found: raw.found,
    routed: raw.routed,
    dispatches: raw.dispatches,
    claim: raw.claim === null ? undefined : claimFrom(raw.claim),
    left: raw.left.map((job) => ({ id: Number(job.id), message: JSON.parse(job.message), attempts: job.attempts })),
    dueMs: raw.dueMs === null ? null : Number(raw.dueMs),
    // Absent from a function older than this code (a rolling deploy): nothing traced.
    traced: (raw.traced ?? [])
      .filter(([traceparent, type]) => typeof traceparent === "string" && typeof type === "string")
      .map(([traceparent, type, at]) => ({ traceparent, type, dispatches: raw.routed[at] ?? 0 })),
  };
}

interface RawStep {
  found: number;
  routed: number[];
  dispatches: number;
  claim: RawClaim | null;
  left: Array<{ id: number | string; message: string; attempts: number }>;
  dueMs: number | null;
  traced?: Array<[traceparent: string, type: string, at: number]>;
}
