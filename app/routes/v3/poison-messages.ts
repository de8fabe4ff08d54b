import { and, desc, eq, lt } from "drizzle-orm";
import { z } from "zod";
import { listOf, pageQuery, unknownCursor } from "../../../lib/api/list-page.ts";
import type { OperationRouter } from "../../../lib/api/operation.ts";
import { ApiError, notFound } from "../../../lib/api/problem.ts";
import { iso, timestamp } from "../../../lib/api/timestamps.ts";
import { recordAudit } from "../../../lib/audit/audit-log.ts";
import type { Principal } from "../../../lib/auth/jwt.ts";
import { webhookPoisonMessage } from "../../../lib/db/schema.ts";
import type { RouteReceipt } from "../../../lib/webhook/transport/webhook-transport.ts";
import { ROUTE_TOPIC, routeMessageSchema } from "../../../lib/webhook/outbound/webhook-out-queue-registrations.ts";
import { idParams } from "./resource-fields.ts";

type PoisonRow = typeof webhookPoisonMessage.$inferSelect;

const EXAMPLE = {
  id: "pm_17",
  object: "poison-message",
  topic: "webhook-out-route",
  event: {
    id: "evt_W_JxWQ3xHey2WjMbI10U",
    type: "payment-debt.refunded",
    resource: "pd_2f97c4e1a8b34d6e9f0a1b2c3d4e5f6a",
  },
  replayable: true,
  error: "unknown event type payment-debt.refunded",
  created: "2026-12-01T09:30:00.000Z",
};

export const poisonMessageSchema = z
  .strictObject({
    id: z.string().describe("`pm_…`"),
    object: z.literal("poison-message"),
    topic: z
      .string()
      .describe(
        "The topic it came on: `webhook-out-route` (an event to route), `webhook-out-deliver` (a dispatch to attempt), or one nothing consumes.",
      ),
    event: z
      .strictObject({
        id: z
          .string()
          .nullable()
          .describe("The message's `eventId` (a deliver message's `dispatchId`); null when it names neither."),
        type: z.string().nullable().describe("The message's `type`: the event type; null when it has none."),
        resource: z
          .string()
          .nullable()
          .describe("The message's `resourceId`: the resource the event is about; null when it has none."),
      })
      .describe("What the message names, where it names it as text (a poison message may be any JSON at all)."),
    replayable: z.boolean().describe("A route message that passes the message schema: replaying sends it again."),
    error: z.string().describe("Why it could not be processed."),
    created: timestamp,
  })
  .meta({ id: "PoisonMessage", examples: [EXAMPLE] });

const PREFIX = "pm_";
const publicId = (id: number) => `${PREFIX}${id}`;
const rowId = (id: string) => (/^pm_[0-9]{1,18}$/.test(id) ? Number(id.slice(PREFIX.length)) : undefined);

/** A field of the stored message, when it is text. */
function textField(message: unknown, key: string): string | null {
  if (message === null || typeof message !== "object" || Array.isArray(message)) return null;
  const value = (message as Record<string, unknown>)[key];
  return typeof value === "string" ? value : null;
}

function present(row: PoisonRow): z.output<typeof poisonMessageSchema> {
  const { message } = row;
  return {
    id: publicId(row.id),
    object: "poison-message",
    topic: row.topic,
    event: {
      id: textField(message, "eventId") ?? textField(message, "dispatchId"),
      type: textField(message, "type"),
      resource: textField(message, "resourceId"),
    },
    replayable: row.topic === ROUTE_TOPIC && routeMessageSchema.safeParse(message).success,
    error: row.error,
    created: iso(row.createdAt),
  };
}

/** Poison messages are the lane's, not an account's: admins only, like `GET /v3/lane`. */
function requireAdmin(principal: Principal): void {
  if (!principal.admin) throw new ApiError(403, "Forbidden", "Only an admin can read or replay poison messages.");
}

/**
 * `GET /v3/poison-messages` and `POST /v3/poison-messages/:id/replay`
 * (admins): messages the lane could not process (a bad schema, an event the
 * catalogue did not know), and sending a route message through again — after
 * a catalogue sync, say. It goes back to the outbox in one transaction with
 * its removal from the list; failing again lands it here again.
 */
export function addPoisonMessages(router: OperationRouter): void {
  router.add(
    {
      method: "get",
      path: "/v3/poison-messages",
      operationId: "listPoisonMessages",
      summary: "List poison messages",
      description: "Messages the lane acknowledged without processing, newest first. Admins only.",
      tag: "Lane",
      query: z.strictObject(pageQuery),
      responses: {
        200: { description: "A page of poison messages.", schema: listOf(poisonMessageSchema) },
        403: { description: "Not an admin." },
      },
    },
    async (c, { query }) => {
      requireAdmin(c.get("principal"));
      const { db } = c.get("database");
      let after: number | undefined;
      if (query.cursor) {
        after = rowId(query.cursor);
        const [found] =
          after === undefined
            ? []
            : await db
                .select({ id: webhookPoisonMessage.id })
                .from(webhookPoisonMessage)
                .where(eq(webhookPoisonMessage.id, after));
        if (!found) throw unknownCursor();
      }
      const rows = await db
        .select()
        .from(webhookPoisonMessage)
        .where(after === undefined ? undefined : lt(webhookPoisonMessage.id, after))
        .orderBy(desc(webhookPoisonMessage.id))
        .limit(query.limit + 1);
      const page = rows.slice(0, query.limit);
      return c.json({
        object: "list" as const,
        data: page.map(present),
        nextCursor: rows.length > query.limit ? publicId(page.at(-1)!.id) : null,
      });
    },
  );

  router.add(
    {
      method: "post",
      path: "/v3/poison-messages/:id/replay",
      operationId: "replayPoisonMessage",
      summary: "Replay a poison route message",
      description:
        "Sends a `webhook-out-route` message through the lane again and removes it from the list. Deliver messages are not replayed: the ledger re-sends deliveries itself. Admins only.",
      tag: "Lane",
      params: idParams("The poison message's id (`pm_…`)."),
      responses: {
        202: { description: "Back on the lane.", schema: poisonMessageSchema },
        403: { description: "Not an admin." },
        409: { description: "Not a route message, or it still fails the message schema." },
      },
    },
    async (c, { params }) => {
      const principal = c.get("principal");
      requireAdmin(principal);
      const { transport } = c.get("hooklane");
      const id = rowId(params.id);
      let receipt: RouteReceipt | undefined;
      const row = await c.get("database").transaction(async (tx) => {
        const [found] =
          id === undefined
            ? []
            : await tx.db
                .delete(webhookPoisonMessage)
                .where(and(eq(webhookPoisonMessage.id, id)))
                .returning();
        if (!found) throw notFound("poison message");
        if (found.topic !== ROUTE_TOPIC) {
          throw new ApiError(409, "Conflict", "Only route messages are replayed; the ledger re-sends deliveries.");
        }
        const parsed = routeMessageSchema.safeParse(found.message);
        if (!parsed.success) throw new ApiError(409, "Conflict", "The message still fails its schema.");
        receipt = await transport.enqueueRoute(tx, parsed.data);
        await recordAudit(tx, principal, {
          action: "poison.replayed",
          target: publicId(found.id),
          account: null,
          detail: { eventId: parsed.data.eventId, type: parsed.data.type },
        });
        return found;
      });
      if (receipt) await transport.routeCommitted(receipt);
      return c.json(present(row), 202);
    },
  );
}
