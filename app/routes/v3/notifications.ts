import { and, desc, eq, isNull, lt, or, type SQL } from "drizzle-orm";
import { z } from "zod";
import { listOf, pageQuery, unknownCursor } from "../../../lib/api/list-page.ts";
import type { OperationRouter } from "../../../lib/api/operation.ts";
import { notFound } from "../../../lib/api/problem.ts";
import { iso, isoOrNull, timestamp } from "../../../lib/api/timestamps.ts";
import { recordAudit, recordListRead } from "../../../lib/audit/audit-log.ts";
import type { Principal } from "../../../lib/auth/jwt.ts";
import {
  MAIL_STATUSES,
  NOTIFICATION_KINDS,
  webhookNotification,
  type WebhookNotification,
} from "../../../lib/db/schema.ts";
import { idParams } from "./resource-fields.ts";

const EXAMPLE = {
  id: "ntf_42",
  object: "notification",
  kind: "dispatch.exhausted.digest",
  webhook: "wh_3e8a1f0c9b2d4e7f8a6c5b4d3e2f1a0b",
  account: "acc_4b1f9e2c7d8a4e6f9b0c1d2e3f4a5b6c",
  detail: {
    total: 500,
    types: [{ type: "payment-debt.created", count: 500, examples: ["pd_2f97c4e1a8b34d6e9f0a1b2c3d4e5f6a"] }],
    windowStart: "2026-12-01T09:00:00.000Z",
    windowEnd: "2026-12-01T10:00:00.000Z",
  },
  digest: null,
  mail: { status: "sent", attempts: 1, sent: "2026-12-01T10:00:05.000Z", error: null },
  created: "2026-12-01T10:00:00.000Z",
};

export const notificationSchema = z
  .strictObject({
    id: z.string().describe("`ntf_…`"),
    object: z.literal("notification"),
    kind: z
      .enum(NOTIFICATION_KINDS)
      .describe(
        "`dispatch.exhausted.digest`: the window's dispatches that failed for good, by type with counts and example resource ids; `webhook.disabled`: mailed at once; `dispatch.exhausted`: one dispatch, told in its digest.",
      ),
    webhook: z.string().describe("The webhook it is about (`wh_…`)."),
    account: z.string().nullable().describe("The webhook's owner; null for a global webhook (mailed to `OPS_EMAIL`)."),
    detail: z
      .record(z.string(), z.unknown())
      .describe(
        "What happened, by `kind`: a digest's `total`, `types` (`type`, `count`, `examples`), `windowStart` and `windowEnd`; a disable's `reason` (and, after a 410, the `dispatchId` that got it); an exhausted dispatch's `dispatchId`, `eventId`, `eventType`, `resourceId`, `attempts` and `lastError`.",
      ),
    digest: z.string().nullable().describe("For `dispatch.exhausted`: the digest that told it, once folded."),
    mail: z
      .strictObject({
        status: z
          .enum(MAIL_STATUSES)
          .describe(
            "`pending`: to be sent (or tried again); `sent`; `none`: nobody to mail (no mail server, or no address); `failed`: given up after the last try; `digest`: never mailed alone, told in its digest.",
          ),
        attempts: z.number().int().describe("Sends tried so far."),
        sent: timestamp.nullable().describe("When the e-mail was sent; null unless `status` is `sent`."),
        error: z.string().nullable().describe("Why the last send failed; it is retried."),
      })
      .describe("The e-mail: sent by the sweeper, retried while the SMTP server refuses it."),
    created: timestamp,
  })
  .meta({ id: "Notification", examples: [EXAMPLE] });

const PREFIX = "ntf_";
const publicId = (id: number) => `${PREFIX}${id}`;
const rowId = (id: string) => (/^ntf_[0-9]{1,18}$/.test(id) ? Number(id.slice(PREFIX.length)) : undefined);

/** The notifications a principal reads: its account's (the global webhooks' too for an admin), every one for support. */
function notificationScope(principal: Principal): SQL | undefined {
  if (principal.support) return undefined;
  const own = eq(webhookNotification.account, principal.account);
  return principal.admin ? or(own, isNull(webhookNotification.account)) : own;
}

/** Timestamps kept in `detail` (jsonb) in the API's one format. */
function presentDetail(detail: unknown): Record<string, unknown> {
  const out = { ...(detail as Record<string, unknown>) };
  for (const key of ["windowStart", "windowEnd"]) {
    if (typeof out[key] === "string") out[key] = iso(new Date(out[key]));
  }
  return out;
}

function presentNotification(row: WebhookNotification): z.output<typeof notificationSchema> {
  return {
    id: publicId(row.id),
    object: "notification",
    kind: row.kind,
    webhook: row.webhookId,
    account: row.account,
    detail: presentDetail(row.detail),
    digest: row.digestId === null || row.digestId === row.id ? null : publicId(row.digestId),
    mail: { status: row.mailStatus, attempts: row.mailAttempts, sent: isoOrNull(row.mailedAt), error: row.mailError },
    created: iso(row.createdAt),
  };
}

const listQuery = z.strictObject({
  kind: z.enum(NOTIFICATION_KINDS).optional().describe("Only notifications of this kind."),
  ...pageQuery,
});

/** `GET /v3/notifications` and `GET /v3/notifications/:id`: what owners were told, and whether the e-mail went. */
export function addNotifications(router: OperationRouter): void {
  router.add(
    {
      method: "get",
      path: "/v3/notifications",
      operationId: "listNotifications",
      summary: "List owner notifications",
      description:
        "What the caller's account was told about its webhooks (digests of deliveries that failed for good, disabled webhooks), newest first, with each e-mail's state. Admins also see the global webhooks'; support every account's, and each account whose notifications support read sees a `notification.read` for it.",
      tag: "Notifications",
      query: listQuery,
      responses: { 200: { description: "A page of notifications.", schema: listOf(notificationSchema) } },
    },
    async (c, { query }) => {
      const database = c.get("database");
      const principal = c.get("principal");
      const { db } = database;
      const scope = notificationScope(principal);
      let after: number | undefined;
      if (query.cursor) {
        after = rowId(query.cursor);
        const [found] =
          after === undefined
            ? []
            : await db
                .select({ id: webhookNotification.id })
                .from(webhookNotification)
                .where(and(eq(webhookNotification.id, after), scope));
        if (!found) throw unknownCursor();
      }
      const rows = await db
        .select()
        .from(webhookNotification)
        .where(
          and(
            scope,
            query.kind ? eq(webhookNotification.kind, query.kind) : undefined,
            after === undefined ? undefined : lt(webhookNotification.id, after),
          ),
        )
        .orderBy(desc(webhookNotification.id))
        .limit(query.limit + 1);
      const page = rows.slice(0, query.limit);
      // Support reading other accounts' notifications: on each one's record.
      await recordListRead(
        database,
        principal,
        { action: "notification.read", target: "notifications", detail: { kind: query.kind } },
        page.map((row) => row.account),
      );
      return c.json({
        object: "list" as const,
        data: page.map(presentNotification),
        nextCursor: rows.length > query.limit ? publicId(page.at(-1)!.id) : null,
      });
    },
  );

  router.add(
    {
      method: "get",
      path: "/v3/notifications/:id",
      operationId: "getNotification",
      summary: "Get an owner notification",
      tag: "Notifications",
      params: idParams("The notification's id (`ntf_…`)."),
      responses: { 200: { description: "The notification.", schema: notificationSchema } },
    },
    async (c, { params }) => {
      const database = c.get("database");
      const principal = c.get("principal");
      const id = rowId(params.id);
      const [row] =
        id === undefined
          ? []
          : await database.db
              .select()
              .from(webhookNotification)
              .where(and(eq(webhookNotification.id, id), notificationScope(principal)));
      if (!row) throw notFound("notification");
      await recordAudit(database, principal, { action: "notification.read", target: params.id, account: row.account });
      return c.json(presentNotification(row));
    },
  );
}
