import { createHash } from "node:crypto";
import { fillPlaceholders, inArray, sql, type Query, type SQL } from "drizzle-orm";
import { PgDialect } from "drizzle-orm/pg-core";
import type { CatalogueEntry, OwnerStrategy } from "../../webhook/catalogue/catalogue-entry.ts";
import type { Database } from "../client.ts";
import { webhookRouteJob } from "../schema.ts";

export const ROUTE_WAKE_CHANNEL = "hooklane_route";

/**
 * Enqueues a route message and, in the same statement, notifies listening
 * workers (inside a transaction the NOTIFY is delivered at commit) unless
 * `wake` is false (the Vercel outbox: nobody listens, and a NOTIFY serialises
 * commits). A job with `notBeforeMs` is left alone by consumers until then.
 * With `owner` (a catalogue owner strategy) the statement reads the
 * resource's owner and stores it in the message as `account`; with
 * `attributes` (the catalogue's), it reads them from the resource's row and
 * stores them as `attributes`, for webhook filters. Returns the job's id,
 * that account and, given `attributes`, what was read of them.
 */
export async function enqueueRouteJob(
  database: Database,
  message: unknown,
  options: { notBeforeMs?: number; owner?: OwnerStrategy; attributes?: EventAttributes; wake?: boolean } = {},
): Promise<{ id: number; account: string | null; attributes?: Record<string, string | null> | null }> {
  const stored = routeMessageValues(message);
  const [row] = await database.rows<{
    id: number | string;
    account: string | null;
    attributes: Record<string, string | null> | null;
  }>(sql`
    with job as (
      insert into webhook_route_job (message, run_at)
      select stored.message, now() + ${options.notBeforeMs ?? 0} * interval '1 millisecond'
      from (${storedRouteMessage(stored.message, options.owner, options.attributes, stored.resourceId)}) stored
      returning id, message ->> 'account' as account, message -> 'attributes' as attributes
    )
    select id, account, attributes${options.wake === false ? sql`` : sql`, pg_notify(${ROUTE_WAKE_CHANNEL}, '')`} from job
  `);
  return {
    id: Number(row!.id),
    account: row!.account,
    ...(options.attributes === undefined ? {} : { attributes: row!.attributes }),
  };
}

/**
 * The statement that enqueues a route message, for `Database.beforeCommit`
 * (the publisher's, which needs nothing back), with the name its SQL is
 * prepared under (one per owner strategy); wake the workers with
 * `notifyAtCommit(ROUTE_WAKE_CHANNEL)` beside it. `owner` and `attributes` as
 * for `enqueueRouteJob`. The SQL is built once per catalogue entry: a request
 * only fills in its values.
 */
export function routeJobInsert(
  message: unknown,
  owner?: OwnerStrategy,
  attributes?: EventAttributes,
): { query: Query; name: string } {
  const insert = compiledInsert(owner, attributes);
  return {
    query: { sql: insert.sql, params: fillPlaceholders(insert.params, routeMessageValues(message)) },
    name: insert.name,
  };
}

/**
 * What a stored route message is built from (a compiled insert's placeholders): its JSON, and the resource id its
 * owner is read by.
 */
function routeMessageValues(message: unknown): { message: string; resourceId: string | undefined } {
  return { message: JSON.stringify(message), resourceId: (message as { resourceId?: string }).resourceId };
}

interface CompiledInsert extends Query {
  name: string;
}

const dialect = new PgDialect();
/** Compiled on first use, not at start-up (only the publisher needs it). */
let unownedInsert: CompiledInsert | undefined;
/**
 * Catalogue entries are built once, so their owner strategies and attributes are the same objects on every
 * request: by owner, then by attributes (`NO_ATTRIBUTES` for none).
 */
const ownedInserts = new WeakMap<OwnerStrategy, WeakMap<object, CompiledInsert>>();
const NO_ATTRIBUTES = {};

function compiledInsert(owner: OwnerStrategy | undefined, attributes: EventAttributes | undefined): CompiledInsert {
  if (owner === undefined && attributes === undefined) return (unownedInsert ??= compileInsert(undefined, undefined));
  if (owner === undefined) return compileInsert(undefined, attributes);
  let byAttributes = ownedInserts.get(owner);
  if (byAttributes === undefined) ownedInserts.set(owner, (byAttributes = new WeakMap()));
  let insert = byAttributes.get(attributes ?? NO_ATTRIBUTES);
  if (insert === undefined) byAttributes.set(attributes ?? NO_ATTRIBUTES, (insert = compileInsert(owner, attributes)));
  return insert;
}

function compileInsert(owner: OwnerStrategy | undefined, attributes: EventAttributes | undefined): CompiledInsert {
  const stored = storedRouteMessage(sql.placeholder("message"), owner, attributes, sql.placeholder("resourceId"));
  const query = dialect.sqlToQuery(
    sql`insert into webhook_route_job (message) select stored.message from (${stored}) stored`,
  );
  // A name per distinct SQL text: two strategies that read the same (two "self" entries) share one statement.
  return { ...query, name: `hooklane_route_job_${createHash("sha256").update(query.sql).digest("hex").slice(0, 16)}` };
}

/**
 * The message as the outbox keeps it. Given the owner strategy, `account` is
 * the resource's owner as this statement sees it: inside the mutation's
 * transaction, so a resource deleted before its event is routed still has
 * the owner it had. The lookup is planned with the statement (a subquery on
 * the catalogue's table and column, quoted as identifiers); routing looks
 * the owner up itself only for a message without `account`
 * (`hooklane_event_owner`). Given attributes, `attributes` is the row's
 * columns as text (null when the row is gone), read the same way.
 */
function storedRouteMessage(
  messageJson: unknown,
  owner: OwnerStrategy | undefined,
  attributes: EventAttributes | undefined,
  resourceId: unknown,
): SQL {
  const given = sql`${messageJson}::jsonb`;
  const added = [
    ...(owner === undefined ? [] : [sql`'account', ${ownerOf(owner, resourceId)}`]),
    ...(attributes === undefined ? [] : [sql`'attributes', ${attributesOf(attributes, resourceId)}`]),
  ];
  if (added.length === 0) return sql`select ${given} as message`;
  return sql`select ${given} || jsonb_build_object(${sql.join(added, sql`, `)}) as message`;
}

/** What a catalogue entry captures for filters: columns of its resource's row. */
export type EventAttributes = NonNullable<CatalogueEntry["attributes"]>;

/** The resource's attributes as an SQL jsonb expression: `{"column": "value as text", …}`, or null when there is no row. */
function attributesOf(attributes: EventAttributes, resourceId: unknown): SQL {
  const pairs = attributes.columns.map((column) => sql`${column}::text, t.${sql.identifier(column)}::text`);
  return sql`(select jsonb_build_object(${sql.join(pairs, sql`, `)}) from ${sql.identifier(attributes.table)} t where t.id = ${resourceId})`;
}

/** The account that owns `resourceId` under `owner`, as an SQL text expression (null when there is none). */
function ownerOf(owner: OwnerStrategy, resourceId: unknown): SQL {
  switch (owner.kind) {
    case "self":
      return sql`${resourceId}::text`;
    case "none":
      return sql`null::text`;
    case "direct":
      return sql`(select ${sql.identifier(owner.column)}::text from ${sql.identifier(owner.table)} where id = ${resourceId})`;
    case "via":
      return sql`(
        select p.${sql.identifier(owner.column)}::text
        from ${sql.identifier(owner.table)} t join ${sql.identifier(owner.parentTable)} p on p.id = t.${sql.identifier(owner.reference)}
        where t.id = ${resourceId})`;
  }
}

export interface ClaimedRouteJob {
  id: number;
  message: unknown;
  attempts: number;
}

/** Leases up to `limit` due route jobs with `FOR UPDATE SKIP LOCKED`. */
export async function claimRouteJobs(
  database: Database,
  options: { workerId: string; limit: number; leaseMs: number },
): Promise<ClaimedRouteJob[]> {
  // The message comes back as text and is parsed here: drivers decode jsonb
  // themselves, so a message that is a JSON string would otherwise arrive as a
  // bare string, indistinguishable from undecoded text.
  const rows = await database.rows<{ id: number | string; message: string; attempts: number }>(sql`
    with due as (
      select id from webhook_route_job
      where run_at <= now() and (locked_until is null or locked_until < now())
      order by run_at, id
      limit ${options.limit}
      for update skip locked
    )
    update webhook_route_job j
    set locked_until = now() + ${options.leaseMs} * interval '1 millisecond',
        locked_by = ${options.workerId},
        attempts = j.attempts + 1
    from due
    where j.id = due.id
    returning j.id, j.message::text as message, j.attempts
  `);
  return rows.map((row) => ({
    id: Number(row.id),
    message: JSON.parse(row.message),
    attempts: row.attempts,
  }));
}

/** Removes route jobs whose dispatches are committed. */
export async function deleteRouteJobs(database: Database, ids: readonly number[]): Promise<void> {
  if (ids.length > 0) await database.db.delete(webhookRouteJob).where(inArray(webhookRouteJob.id, [...ids]));
}

/**
 * Route jobs forwarded to a queue: kept, and left alone by the sweep for
 * `checkMs` (doubling with each forward, at most a day), by when the route
 * stage should have deleted them (`deleteRoutedJob`); one still here then was
 * lost or keeps failing, and is forwarded again. `counted`: the forwards were
 * already counted in `attempts` (by `claimRouteJobs`).
 */
export async function markRouteJobsForwarded(
  database: Database,
  ids: readonly number[],
  options: { checkMs: number; counted: boolean },
): Promise<void> {
  if (ids.length === 0) return;
  await database.rows(sql`
    update webhook_route_job
    set locked_until = null, locked_by = null,
        attempts = attempts + ${options.counted ? 0 : 1},
        run_at = now() + least(86400000, ${options.checkMs}::float8 * 2 ^ greatest(0, attempts - ${options.counted ? 1 : 0}))
          * interval '1 millisecond'
    where id in (select jsonb_array_elements_text(${JSON.stringify(ids)}::jsonb)::bigint)
  `);
}

/**
 * A forwarded route job whose message is still being tried: left alone by
 * the sweep for `ms` more, with the error kept for inspection.
 */
export async function holdRouteJob(database: Database, id: number, ms: number, error: string): Promise<void> {
  await database.rows(sql`
    update webhook_route_job
    set run_at = greatest(run_at, now() + ${Math.round(ms)} * interval '1 millisecond'), last_error = ${error}
    where id = ${id}
  `);
}

/** Deletes the outbox row a route message was forwarded from, once its event's dispatches exist. */
export async function deleteRoutedJob(database: Database, id: number, eventId: string): Promise<void> {
  await database.rows(sql`delete from webhook_route_job where id = ${id} and message ->> 'eventId' = ${eventId}`);
}

/** Puts a failed route job back for a later try, keeping the error for inspection. */
export async function retryRouteJob(database: Database, id: number, delayMs: number, error: string): Promise<void> {
  await database.rows(sql`
    update webhook_route_job
    set locked_until = null, locked_by = null, last_error = ${error},
        run_at = now() + ${delayMs} * interval '1 millisecond'
    where id = ${id}
  `);
}

/** Milliseconds until the next unleased route job is due (≤ 0: now), or null when none waits. */
export async function nextRouteJobDueInMs(database: Database): Promise<number | null> {
  const [row] = await database.rows<{ ms: number | string | null }>(sql`
    select (extract(epoch from (run_at - now())) * 1000)::float8 as ms
    from webhook_route_job
    where locked_until is null or locked_until < now()
    order by run_at
    limit 1
  `);
  return row?.ms == null ? null : Number(row.ms);
}
