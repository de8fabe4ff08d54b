import { sql } from "drizzle-orm";
import type { Database } from "../client.ts";

/** What routing needs of a catalogue entry: the body's `data.object` and how the owning account is found. */
export interface RouteRule {
  object: string;
  /** The catalogue's owner strategy (`self`, `direct`, `via`, `none`); its names come from the reviewed catalogue. */
  owner: unknown;
}

/** A route message, as the route stage has parsed it. */
export interface RoutedEvent {
  eventId: string;
  type: string;
  resourceId: string;
  occurredAt: string;
  livemode: boolean;
  /** The owner read when the event was published (null: none); absent, it is looked up now. */
  account?: string | null | undefined;
  /** The attributes read when the event was published (null: the row was gone), for webhook filters. */
  attributes?: Record<string, string | null> | null | undefined;
  /** The trace the event was published in (tracing on): its dispatches keep it. */
  traceparent?: string | undefined;
}

/**
 * Routes one event in one statement (`hooklane_route_events`, lib/db/functions/,
 * the postgres lane's route step with a batch of one): takes the account the
 * publisher read (`event.account`), or resolves the one that owns its
 * resource now per `rule.owner`, builds the thin body, and inserts one
 * pending dispatch (and its open row) per webhook that hears `event.type`
 * for that account (global webhooks always, account webhooks only for their
 * own account) and whose filter the event's `attributes` match. Paused and
 * disabled webhooks get their rows too (delivered on re-enable). A
 * deprecated type (or one never synced) gets none, even from a publisher
 * whose subscribed set is up to 30 s old. Idempotent per event x webhook: a
 * redelivered route message inserts nothing and returns only the ids it
 * created.
 */
export async function insertDispatches(database: Database, event: RoutedEvent, rule: RouteRule): Promise<string[]> {
  const message = {
    eventId: event.eventId,
    type: event.type,
    resourceId: event.resourceId,
    occurredAt: event.occurredAt,
    livemode: event.livemode,
    ...(event.account === undefined ? {} : { account: event.account }),
    ...(event.attributes === undefined ? {} : { attributes: event.attributes }),
    ...(event.traceparent === undefined ? {} : { traceparent: event.traceparent }),
  };
  const [row] = await database.rows<{ ids: string }>(sql`
    select array_to_json(ids)::text as ids
    from hooklane_route_events(array[${JSON.stringify(message)}::jsonb], array[${JSON.stringify(rule)}::jsonb])
  `);
  return JSON.parse(row!.ids);
}
