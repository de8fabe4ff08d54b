import { z } from "zod";

const identifier = z.string().regex(/^[a-z_][a-z0-9_]*$/, "must be a lower-case SQL identifier");

/** How the route stage finds the account that owns the mutated resource. */
export const ownerStrategySchema = z.discriminatedUnion("kind", [
  /** The resource is the account. */
  z.object({ kind: z.literal("self") }),
  /** `table.column` holds the account. */
  z.object({ kind: z.literal("direct"), table: identifier, column: identifier }),
  /** `table.reference` points at `parentTable.id`, whose `column` holds the account. */
  z.object({
    kind: z.literal("via"),
    table: identifier,
    reference: identifier,
    parentTable: identifier,
    column: identifier,
  }),
  /** No account: only global webhooks hear it. */
  z.object({ kind: z.literal("none") }),
]);
export type OwnerStrategy = z.infer<typeof ownerStrategySchema>;

/**
 * The thin body a subscriber receives for this event, with made-up
 * identifiers: what `GET /v3/webhook-event-types` shows as the example.
 */
export const exampleBodySchema = z.strictObject({
  id: z.string().regex(/^evt_[A-Za-z0-9_-]+$/, "must be an evt_ id"),
  type: z.string(),
  created: z.iso.datetime({ error: "must be an ISO-8601 UTC timestamp" }),
  livemode: z.boolean(),
  data: z.strictObject({
    object: z.string(),
    id: z.string().min(1),
    account: z.string().min(1).nullable(),
  }),
});
export type ExampleBody = z.infer<typeof exampleBodySchema>;

/** A catalogue example as a webhook receives it: with `object` and `sequence` (none given: none), in the body's key order. */
export function exampleAsDelivered(example: ExampleBody, sequence: number | undefined = 1): Record<string, unknown> {
  const { id, type, created, livemode, data } = example;
  return { id, object: "event", type, created, livemode, ...(sequence === undefined ? {} : { sequence }), data };
}

/** `<resource>.<verb>`, dotted, lower-case: what an event type's name looks like. */
export const EVENT_TYPE_NAME = /^[a-z][a-z0-9-]*(\.[a-z][a-z0-9-]*)+$/;

export const catalogueEntrySchema = z.object({
  /** `<resource>.<verb>`, dotted, lower-case: the event type subscribers see. */
  internal: z.string().regex(EVENT_TYPE_NAME, "must look like resource.verb"),
  method: z.enum(["POST", "PUT", "PATCH", "DELETE"]),
  /** The Hono route template, e.g. `/v3/payment-debts/:id`. */
  route: z.string().regex(/^\/v3(\/[A-Za-z0-9:_-]+)+$/, "must be a /v3 route template"),
  /** `data.object` in the thin body. */
  resource: z.string().regex(/^[a-z][a-z0-9.-]*$/),
  /** Where the resource id comes from: a path parameter or a field of the response body. */
  idFrom: z.object({ source: z.enum(["param", "body"]), name: z.string().min(1) }),
  owner: ownerStrategySchema,
  description: z.string().min(10),
  /**
   * What a webhook's filter may read of this event: columns of the
   * resource's row (`table`, by `id`), captured as text when the event is
   * published, in the mutation's transaction. Never sent in the body.
   */
  attributes: z.strictObject({ table: identifier, columns: z.array(identifier).min(1).max(10) }).optional(),
  example: exampleBodySchema,
  /** The day the event was first emitted, shown to subscribers. */
  since: z.string().regex(/^\d{4}-\d{2}-\d{2}$/, "must be a YYYY-MM-DD date"),
  /**
   * The route stays (and stays covered), but the event is retired: once synced
   * nobody can subscribe to it and nothing is delivered for it.
   */
  deprecated: z.boolean().default(false),
});
export type CatalogueEntry = z.infer<typeof catalogueEntrySchema>;
