import type { Arrivals } from "../bench/subscriber.ts";
import { distribution, type Distribution } from "../bench/stats.ts";
import type { DrillWebhook } from "./drill-stack.ts";
import type { LoadRecord } from "./load-driver.ts";
import type { PostgresCluster } from "./postgres-cluster.ts";

/** What the ledger, the load and the receiver say once a drill has drained. */
export interface LedgerFigures {
  /** Resources the load created that exist in their table: the mutations that committed. */
  committed: number;
  /** Requests answered 2xx. */
  acknowledged: number;
  /** 2xx answers for a resource that is not in its table: a lie to the caller. */
  acknowledgedNotCommitted: number;
  /** Committed although the caller saw no 2xx (it died with the API, or timed out). */
  committedNotAcknowledged: number;
  /** Events the API published for the load (distinct event ids in the ledger, route jobs and poison rows). */
  published: number;
  /** Events for a resource that is not in its table: an event for a mutation that did not commit. */
  phantom: number;
  /** Resources with more than one event id. */
  split: number;
  /** Deliveries owed: every committed resource to every matching webhook. */
  expected: number;
  /** Of those, received at least once. */
  delivered: number;
  /** Owed to an acknowledged resource and never received. */
  lost: number;
  /** Owed to a committed resource whose caller saw no 2xx, and never received. */
  lostUnacknowledged: number;
  /** POSTs received more than once for the same webhook and event (allowed: at least once). */
  duplicates: number;
  /** POSTs to a webhook that does not hear the event. */
  misrouted: number;
  /** Dispatches that ran out of attempts. */
  exhausted: number;
  /** Dispatches still pending or failed, route jobs left, poison messages. */
  open: number;
  routeJobsLeft: number;
  poison: number;
}

/** The committed resources of the load, read once the load has stopped (nothing commits afterwards). */
export async function committedResources(cluster: PostgresCluster): Promise<Set<string>> {
  const rows = await cluster.query<{ id: string }>("select id from payment_debt");
  return new Set(rows.map((row) => row.id));
}

/** Deliveries owed to `committed` resources that `arrivals` do not contain yet. */
export function missingDeliveries(
  committed: ReadonlySet<string>,
  webhooks: readonly DrillWebhook[],
  arrivals: Arrivals,
): number {
  const received = receivedPairs(arrivals);
  let missing = 0;
  for (const hook of webhooks) {
    if (!hook.matching) continue;
    for (const id of committed) if (!received.has(`${hook.path} ${id}`)) missing++;
  }
  return missing;
}

/** Reads the ledger and compares it with what the load was told and what the receiver got. */
export async function checkLedger(options: {
  cluster: PostgresCluster;
  committed: ReadonlySet<string>;
  load: LoadRecord;
  webhooks: readonly DrillWebhook[];
  arrivals: Arrivals;
}): Promise<LedgerFigures> {
  const { cluster, committed, load, webhooks, arrivals } = options;
  const events = await cluster.query<{ event_id: string; resource_id: string }>(`
    select event_id, payload::jsonb -> 'data' ->> 'id' as resource_id from webhook_dispatch
    union
    select message ->> 'eventId', message ->> 'resourceId' from webhook_route_job
    union
    select message ->> 'eventId', message ->> 'resourceId' from webhook_poison_message
  `);
  const [ledger] = await cluster.query<{ exhausted: number; open: number; jobs: number; poison: number }>(`
    select
      (select count(*)::int from webhook_dispatch where status = 'exhausted') as exhausted,
      (select count(*)::int from webhook_dispatch where status in ('pending', 'error')) as open,
      (select count(*)::int from webhook_route_job) as jobs,
      (select count(*)::int from webhook_poison_message) as poison
  `);

  const eventsOf = new Map<string, Set<string>>();
  for (const { event_id, resource_id } of events) {
    if (!eventsOf.has(resource_id)) eventsOf.set(resource_id, new Set());
    eventsOf.get(resource_id)!.add(event_id);
  }
  const acknowledged = new Set(load.acknowledged.map((a) => a.id));
  const received = receivedPairs(arrivals);
  const matching = webhooks.filter((h) => h.matching);
  const other = new Set(webhooks.filter((h) => !h.matching).map((h) => h.path));

  let lost = 0;
  let lostUnacknowledged = 0;
  let delivered = 0;
  for (const hook of matching) {
    for (const id of committed) {
      if (received.has(`${hook.path} ${id}`)) delivered++;
      else if (acknowledged.has(id)) lost++;
      else lostUnacknowledged++;
    }
  }
  // An acknowledged resource that did not commit is owed nothing, but is a lie; count its deliveries as lost too.
  const acknowledgedNotCommitted = [...acknowledged].filter((id) => !committed.has(id)).length;

  const distinct = new Set(arrivals.paths.map((path, i) => `${path} ${arrivals.eventIds[i]}`));
  return {
    committed: committed.size,
    acknowledged: acknowledged.size,
    acknowledgedNotCommitted,
    committedNotAcknowledged: [...committed].filter((id) => !acknowledged.has(id)).length,
    published: new Set(events.map((e) => e.event_id)).size,
    phantom:
      events.filter((e) => !committed.has(e.resource_id)).length +
      arrivals.ids.filter((id) => !committed.has(id)).length,
    split: [...eventsOf.values()].filter((ids) => ids.size > 1).length,
    expected: committed.size * matching.length,
    delivered,
    lost: lost + acknowledgedNotCommitted * matching.length,
    lostUnacknowledged,
    duplicates: arrivals.paths.length - distinct.size,
    misrouted: arrivals.paths.filter((path) => other.has(path)).length,
    exhausted: ledger!.exhausted,
    open: ledger!.open,
    routeJobsLeft: ledger!.jobs,
    poison: ledger!.poison,
  };
}

/** Latency from each acknowledged resource's 2xx to its first POST at each matching webhook, in ms. */
export interface LatencySample {
  /** When the 2xx was read. */
  at: number;
  ms: number;
}

export function latencySamples(
  load: LoadRecord,
  webhooks: readonly DrillWebhook[],
  arrivals: Arrivals,
): LatencySample[] {
  const first = new Map<string, number>();
  arrivals.paths.forEach((path, i) => {
    const key = `${path} ${arrivals.ids[i]}`;
    if (!first.has(key)) first.set(key, arrivals.times[i]!);
  });
  const samples: LatencySample[] = [];
  for (const hook of webhooks.filter((h) => h.matching)) {
    for (const ack of load.acknowledged) {
      const at = first.get(`${hook.path} ${ack.id}`);
      if (at !== undefined) samples.push({ at: ack.at, ms: at - ack.at });
    }
  }
  return samples;
}

/** The latency of events acknowledged in [from, to). */
export function latencyBetween(samples: readonly LatencySample[], from: number, to: number): Distribution {
  return distribution(samples.filter((s) => s.at >= from && s.at < to).map((s) => s.ms));
}

function receivedPairs(arrivals: Arrivals): Set<string> {
  return new Set(arrivals.paths.map((path, i) => `${path} ${arrivals.ids[i]}`));
}
