import { randomBase64url } from "../../random-id.ts";

/** A new event id: `evt_` and 24 random base32-ish characters, sortable enough for logs. */
export function newEventId(): string {
  return `evt_${randomBase64url(15)}`;
}

export interface ThinEvent {
  id: string;
  type: string;
  created: string;
  livemode: boolean;
  object: string;
  resourceId: string;
  account: string | null;
  /** The event's place in its webhook's stream; absent for a `webhook.test` event. */
  sequence?: number;
}

/**
 * The thin body: identifiers only, never authoritative data. Built once per
 * event at route time and stored, so every attempt sends the same bytes.
 */
export function buildEventBody(event: ThinEvent): string {
  return JSON.stringify({
    id: event.id,
    object: "event",
    type: event.type,
    created: event.created,
    livemode: event.livemode,
    sequence: event.sequence,
    data: { object: event.object, id: event.resourceId, account: event.account },
  });
}
