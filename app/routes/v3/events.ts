import { z } from "zod";
import { listOf, pageQuery, unknownCursor } from "../../../lib/api/list-page.ts";
import type { OperationRouter } from "../../../lib/api/operation.ts";
import { whenFieldsValid } from "../../../lib/api/validation-errors.ts";
import { recordAudit } from "../../../lib/audit/audit-log.ts";
import { readEventStream } from "../../../lib/db/sql/event-stream.ts";
import { EVENT_TYPE_NAME } from "../../../lib/webhook/catalogue/catalogue-entry.ts";
import { findWebhook } from "../../../lib/webhook/webhook-scope.ts";
import { eventBodySchema } from "./dispatch-schemas.ts";

/** The longest a request waits for an event (`wait`), and how often it looks meanwhile. */
export const EVENTS_WAIT_MAX_SECONDS = 30;
const WAIT_POLL_MS = 500;

const eventsQuery = z
  .strictObject({
    webhook: z.string().min(1).max(100).describe("The webhook whose stream to read (`wh_…`)."),
    after: z.coerce
      .number()
      .int()
      .min(0)
      .max(Number.MAX_SAFE_INTEGER)
      .optional()
      .describe(
        "Events after this `sequence`: the last one you hold (0, or nothing, for the stream's start). A gap from `m` to `n` is `after=m-1&limit=n-m+1`.",
      ),
    types: z
      .string()
      .min(1)
      .max(2_000)
      .refine(
        (value) => value.split(",").every((type) => EVENT_TYPE_NAME.test(type)),
        "must be event types separated by commas",
      )
      .optional()
      .describe("Only these event types, comma-separated, e.g. `payment-debt.created,payment-debt.updated`."),
    wait: z
      .string()
      .regex(/^\d{1,2}s?$/, "must be a number of seconds, e.g. 30s")
      .refine(
        (value) => Number.parseInt(value, 10) <= EVENTS_WAIT_MAX_SECONDS,
        `must be at most ${EVENTS_WAIT_MAX_SECONDS}s`,
      )
      .optional()
      .describe(
        `With no event after the position yet: wait up to this many seconds (at most ${EVENTS_WAIT_MAX_SECONDS}, e.g. \`30s\`) for one before answering an empty page.`,
      ),
    ...pageQuery,
  })
  .refine((query) => query.after === undefined || query.cursor === undefined, {
    path: ["cursor"],
    message: "give after or cursor, not both",
    when: whenFieldsValid,
  })
  .meta({ examples: [{ webhook: "wh_3e8a1f0c9b2d4e7f8a6c5b4d3e2f1a0b", after: "41", wait: "30s" }] });

/** A cursor is the sequence of the last event of the page before: digits, nothing else. */
function cursorPosition(cursor: string): number {
  if (!/^\d{1,15}$/.test(cursor)) throw unknownCursor();
  return Number(cursor);
}

/**
 * `GET /v3/events?webhook=…&after=…`: one webhook's events in the order it was sent them, by `sequence`, with the
 * bodies it was sent: to fill a gap a receiver saw, or to receive by polling alone (behind a firewall, with a stored
 * position) instead of by POST.
 */
export function addEvents(router: OperationRouter): void {
  router.add(
    {
      method: "get",
      path: "/v3/events",
      operationId: "listEvents",
      summary: "Read a webhook's events in order",
      description:
        "A webhook's events oldest first, by `sequence` (1, 2, 3… per webhook, never skipped), each with exactly the body the webhook is sent, whatever became of its delivery, for as long as the delivery log keeps it (`WEBHOOK_RETENTION`). Fill a gap (`after` = the sequence before it), or poll: keep the last `sequence` you processed and pass it as `after`, with `wait` to hold the request open until an event comes. `webhook.test` events are not in the stream.",
      tag: "Event stream",
      query: eventsQuery,
      responses: {
        200: {
          description: "A page of events, oldest first; `nextCursor` when more follow at once.",
          schema: listOf(eventBodySchema),
        },
      },
    },
    async (c, { query }) => {
      const database = c.get("database");
      const principal = c.get("principal");
      const hook = await findWebhook(database, principal, query.webhook, { support: true, deleted: true });
      await recordAudit(database, principal, { action: "webhook.log-read", target: hook.id, account: hook.account });
      const after = query.cursor === undefined ? (query.after ?? 0) : cursorPosition(query.cursor);
      const types = query.types?.split(",");
      const read = () => readEventStream(database, { webhookId: hook.id, after, types, limit: query.limit + 1 });
      let rows = await read();
      const waitUntil = Date.now() + Number.parseInt(query.wait ?? "0", 10) * 1_000;
      const signal = c.req.raw.signal;
      while (rows.length === 0 && Date.now() < waitUntil && !signal.aborted) {
        await new Promise((resolve) => setTimeout(resolve, Math.min(WAIT_POLL_MS, waitUntil - Date.now())));
        rows = await read();
      }
      const page = rows.slice(0, query.limit);
      return c.json({
        object: "list" as const,
        data: page.map((row) => JSON.parse(row.payload) as z.output<typeof eventBodySchema>),
        nextCursor: rows.length > query.limit ? String(page.at(-1)!.sequence) : null,
      });
    },
  );
}
