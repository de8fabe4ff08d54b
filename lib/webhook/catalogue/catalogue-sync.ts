import { arrayOverlaps, eq, sql } from "drizzle-orm";
import type { Database, Db } from "../../db/client.ts";
import { webhook, webhookEventType, type WebhookEventType, type WebhookStatus } from "../../db/schema.ts";
import type { CatalogueEntry } from "./catalogue-entry.ts";

/** The columns the sync owns: every column but its timestamps. */
export type EventTypeFields = Omit<WebhookEventType, "createdAt" | "updatedAt">;

/** A webhook that names an event type explicitly (a `*` webhook names none). */
export interface SubscribedWebhook {
  id: string;
  /** null for a global webhook. */
  account: string | null;
  status: WebhookStatus;
}

/** What a sync would do, event by event, against what the database holds now. */
export interface CatalogueSyncPlan {
  /** In the catalogue, not yet in the database. */
  added: EventTypeFields[];
  /** In both, with `fields` differing (restoring a deprecated type is a change of `deprecated`). */
  changed: Array<{ fields: Array<keyof EventTypeFields>; row: EventTypeFields }>;
  /** Active in the database, but gone from the catalogue or marked deprecated there. */
  deprecated: Array<{ row: EventTypeFields; subscribers: SubscribedWebhook[] }>;
  unchanged: string[];
}

export type CatalogueSyncOutcome =
  /** The database already matched: nothing was written. */
  | "unchanged"
  | "applied"
  /** A deprecation still has explicit subscribers and `force` was not given: nothing was written. */
  | "refused";

/** One write of an apply, reported as it commits to the transaction. */
export interface CatalogueSyncStep {
  index: number;
  total: number;
  kind: "added" | "changed" | "deprecated";
  internal: string;
}

// Any constant will do (the migrator uses another); it serialises concurrent syncs (N processes auto-syncing at start).
const SYNC_LOCK = 7_207_312;

/** The row a catalogue entry becomes: everything subscribers are shown, and the route that emits it. */
export function eventTypeRow(entry: CatalogueEntry): EventTypeFields {
  return {
    internal: entry.internal,
    method: entry.method,
    route: entry.route,
    resource: entry.resource,
    ownerKind: entry.owner.kind,
    description: entry.description,
    example: entry.example,
    since: entry.since,
    deprecated: entry.deprecated,
  };
}

/** The diff between `entries` and the database's `webhook_event_type`, read-only. */
export async function planCatalogueSync(
  database: Database,
  entries: readonly CatalogueEntry[],
): Promise<CatalogueSyncPlan> {
  return plan(database.db, entries);
}

/**
 * Makes `webhook_event_type` match `entries` in one transaction, serialised
 * with any other sync: inserts new types, updates changed ones, and marks
 * types that left the catalogue (or are marked deprecated in it) deprecated,
 * never deleting a row. The plan is computed again under the lock, so the
 * returned plan is what was applied. Without `force`, a deprecation of a type
 * that webhooks still name explicitly refuses the whole sync and writes
 * nothing. Idempotent: a second run is `unchanged`. Throws only on database errors.
 */
export async function applyCatalogueSync(
  database: Database,
  entries: readonly CatalogueEntry[],
  options: { force?: boolean; onStep?: (step: CatalogueSyncStep) => void } = {},
): Promise<{ outcome: CatalogueSyncOutcome; plan: CatalogueSyncPlan }> {
  return database.db.transaction(async (tx) => {
    await tx.execute(sql`select pg_advisory_xact_lock(${SYNC_LOCK})`);
    const current = await plan(tx, entries);
    if (!options.force && blockedDeprecations(current).length > 0) return { outcome: "refused", plan: current };

    const steps = [
      ...current.added.map((row) => ({ kind: "added" as const, row })),
      ...current.changed.map(({ row }) => ({ kind: "changed" as const, row })),
      ...current.deprecated.map(({ row }) => ({ kind: "deprecated" as const, row })),
    ];
    for (const [index, { kind, row }] of steps.entries()) {
      if (kind === "added") await tx.insert(webhookEventType).values(row);
      else
        await tx
          .update(webhookEventType)
          .set({ ...row, updatedAt: sql`now()` })
          .where(eq(webhookEventType.internal, row.internal));
      options.onStep?.({ index: index + 1, total: steps.length, kind, internal: row.internal });
    }
    return { outcome: steps.length > 0 ? "applied" : "unchanged", plan: current };
  });
}

/** The deprecations a sync without `force` refuses: those with webhooks still naming the type. */
export function blockedDeprecations(plan: CatalogueSyncPlan): CatalogueSyncPlan["deprecated"] {
  return plan.deprecated.filter((deprecation) => deprecation.subscribers.length > 0);
}

/** Whether applying `plan` would write anything. */
export function hasChanges(plan: CatalogueSyncPlan): boolean {
  return plan.added.length + plan.changed.length + plan.deprecated.length > 0;
}

async function plan(db: Db, entries: readonly CatalogueEntry[]): Promise<CatalogueSyncPlan> {
  const stored = new Map((await db.select().from(webhookEventType)).map((row) => [row.internal, row]));
  const wanted = new Map(entries.map((entry) => [entry.internal, eventTypeRow(entry)]));
  // A type that left the catalogue stays, deprecated: old deliveries and subscriptions still name it.
  for (const [internal, row] of stored) {
    if (!wanted.has(internal)) wanted.set(internal, { ...withoutTimestamps(row), deprecated: true });
  }

  const result: CatalogueSyncPlan = { added: [], changed: [], deprecated: [], unchanged: [] };
  for (const row of [...wanted.values()].sort((a, b) => (a.internal < b.internal ? -1 : 1))) {
    const before = stored.get(row.internal);
    if (!before) {
      result.added.push(row);
      continue;
    }
    const fields = (Object.keys(row) as Array<keyof EventTypeFields>).filter(
      (field) => JSON.stringify(before[field]) !== JSON.stringify(row[field]),
    );
    if (fields.length === 0) result.unchanged.push(row.internal);
    else if (row.deprecated && !before.deprecated) result.deprecated.push({ row, subscribers: [] });
    else result.changed.push({ fields, row });
  }

  if (result.deprecated.length > 0) {
    const subscribers = await db
      .select({ id: webhook.id, account: webhook.account, status: webhook.status, events: webhook.events })
      .from(webhook)
      .where(
        arrayOverlaps(
          webhook.events,
          result.deprecated.map(({ row }) => row.internal),
        ),
      )
      .orderBy(webhook.id);
    for (const deprecation of result.deprecated) {
      deprecation.subscribers = subscribers
        .filter((subscriber) => subscriber.events.includes(deprecation.row.internal))
        .map(({ id, account, status }) => ({ id, account, status }));
    }
  }
  return result;
}

function withoutTimestamps(row: WebhookEventType): EventTypeFields {
  const { createdAt: _createdAt, updatedAt: _updatedAt, ...fields } = row;
  return fields;
}
