// The scale-out scenario's backlog: accounts, each with one webhook on every origin, and events in the outbox
// (`webhook_route_job`), each heard by its account's webhooks; then whether each event × webhook arrived and was
// recorded exactly once.
import { sql } from "drizzle-orm";
import type { Database } from "../lib/db/client.ts";
import { account } from "../lib/db/schema.ts";
import { ROUTE_WAKE_CHANNEL } from "../lib/db/sql/route-jobs.ts";
import type { RouteMessage } from "../lib/webhook/outbound/webhook-out-queue-registrations.ts";
import type { BenchDatabase } from "./bench-database.ts";
import { BENCH_EVENT_TYPE } from "./bench-event-body.ts";
import type { Arrivals } from "./subscriber.ts";

const accountId = (k: number) => `acc_scale_out_${k}`;
/** The path of account k's webhook on origin j, which tells the subscriber's arrivals apart. */
const webhookPath = (k: number, j: number) => `/scale-out/a${k}/o${j}`;
/** A batch's event ids: `tag` of 7 characters or more keeps every id in the route message's pattern. */
const eventPrefix = (tag: string) => `evt_${tag}_`;

/** The backlog's shape: `accounts` × `origins` webhooks; event n is account `n % accounts`'s. */
export interface BacklogShape {
  accounts: number;
  /** One URL per origin: the subscriber's ports. */
  originUrls: readonly string[];
}

/** Creates the accounts once per run; `reset()` keeps them, as it keeps the benchmark account. */
export async function createAccounts(database: Database, shape: BacklogShape): Promise<void> {
  const rows = Array.from({ length: shape.accounts }, (_, k) => ({ id: accountId(k), name: `Scale-out ${k}` }));
  await database.db.insert(account).values(rows).onConflictDoNothing();
}

/** Each account's webhook on every origin, secrets sealed as the API seals them. */
export async function seedWebhooks(db: BenchDatabase, shape: BacklogShape): Promise<void> {
  for (let k = 0; k < shape.accounts; k++) {
    for (const [j, origin] of shape.originUrls.entries()) {
      await db.seedWebhooks(1, `${origin}${webhookPath(k, j)}`, "account", accountId(k));
    }
  }
}

/**
 * Writes `events` route messages into the outbox in one transaction, with their resources (payment debts, one each,
 * taking turns over the accounts), and wakes the lane at commit. Each message is what the publisher stores
 * (`routeJobInsert`): the route message with `account` read from the resource in the same transaction (the
 * catalogue's owner of payment-debt.created: `payment_debt.account`), so routing does not look the owner up.
 */
export async function insertEvents(
  database: Database,
  shape: BacklogShape,
  tag: string,
  events: number,
): Promise<void> {
  const occurredAt = new Date().toISOString();
  const rows = Array.from({ length: events }, (_, n) => ({
    n,
    account: accountId(n % shape.accounts),
    message: {
      eventId: `${eventPrefix(tag)}${n}`,
      type: BENCH_EVENT_TYPE,
      resourceId: `pd_${tag}_${n}`,
      occurredAt,
      livemode: true,
    } satisfies RouteMessage,
  }));
  const json = JSON.stringify(rows);
  await database.db.transaction(async (tx) => {
    await tx.execute(sql`
      insert into payment_debt (id, account, amount, currency)
      select r.message ->> 'resourceId', r.account, 10.00, 'EUR'
      from jsonb_to_recordset(${json}::jsonb) as r(n int, account text, message jsonb)
    `);
    await tx.execute(sql`
      insert into webhook_route_job (message)
      select r.message || jsonb_build_object('account',
        (select d.account::text from payment_debt d where d.id = r.message ->> 'resourceId'))
      from jsonb_to_recordset(${json}::jsonb) as r(n int, account text, message jsonb)
      order by r.n
    `);
    await tx.execute(sql`select pg_notify(${ROUTE_WAKE_CHANNEL}, '')`);
  });
}

export interface LedgerSpan {
  /** Successes the ledger recorded for the batch. */
  succeeded: number;
  /** From its first recorded success to its last (`completed_at`), in milliseconds. */
  spanMs: number;
  /** What is wrong with it (empty: one successful dispatch, with one attempt, per event × webhook of its account). */
  problems: string[];
}

/** The ledger's view of batch `tag` of `events` events. */
export async function ledgerSpan(
  db: BenchDatabase,
  shape: BacklogShape,
  tag: string,
  events: number,
): Promise<LedgerSpan> {
  const expected = events * shape.originUrls.length;
  const [row] = await db.database.rows<{
    dispatches: number;
    succeeded: number;
    misrouted: number;
    attempts: number;
    span_ms: number | null;
  }>(sql`
    select count(*)::int as dispatches,
      count(*) filter (where d.status = 'success')::int as succeeded,
      count(*) filter (where d.account is distinct from w.account)::int as misrouted,
      coalesce(sum((select count(*) from webhook_attempt a where a.dispatch_id = d.id)), 0)::int as attempts,
      (extract(epoch from max(d.completed_at) filter (where d.status = 'success')
        - min(d.completed_at) filter (where d.status = 'success')) * 1000)::float8 as span_ms
    from webhook_dispatch d join webhook w on w.id = d.webhook_id
    where starts_with(d.event_id, ${eventPrefix(tag)})
  `);
  const problems: string[] = [];
  if (row!.dispatches !== expected) problems.push(`${row!.dispatches} dispatches for ${expected} event × webhook`);
  if (row!.succeeded !== expected) problems.push(`${row!.succeeded} of ${expected} recorded as success`);
  if (row!.attempts !== expected) problems.push(`${row!.attempts} attempts recorded for ${expected} deliveries`);
  if (row!.misrouted > 0) problems.push(`${row!.misrouted} dispatches to another account's webhook`);
  return { succeeded: row!.succeeded, spanMs: row!.span_ms ?? NaN, problems };
}

/** What is wrong with the POSTs of batch `tag` (empty: each event × webhook of its account arrived once). */
export function arrivalProblems(arrivals: Arrivals, shape: BacklogShape, tag: string, events: number): string[] {
  const prefix = eventPrefix(tag);
  const seen = new Set<string>();
  let duplicates = 0;
  let strays = 0;
  arrivals.eventIds.forEach((id, i) => {
    const rest = id.startsWith(prefix) ? id.slice(prefix.length) : "";
    const n = /^\d+$/.test(rest) ? Number(rest) : NaN;
    const path = /^\/scale-out\/a(\d+)\/o(\d+)$/.exec(arrivals.paths[i]!);
    if (
      !Number.isInteger(n) ||
      n >= events ||
      !path ||
      Number(path[1]) !== n % shape.accounts ||
      Number(path[2]) >= shape.originUrls.length
    ) {
      strays++;
      return;
    }
    const key = `${id} ${arrivals.paths[i]}`;
    if (seen.has(key)) duplicates++;
    else seen.add(key);
  });
  const expected = events * shape.originUrls.length;
  return [
    ...(seen.size < expected ? [`${expected - seen.size} of ${expected} event × webhook POSTs missing`] : []),
    ...(duplicates > 0 ? [`${duplicates} POSTs arrived twice`] : []),
    ...(strays > 0 ? [`${strays} POSTs not of this batch or to another account's webhook`] : []),
  ];
}
