import { eq, isNull, or, type SQL } from "drizzle-orm";
import { z } from "zod";
import { listOf, listPage, pageQuery, readNewestFirst } from "../../../lib/api/list-page.ts";
import type { OperationRouter } from "../../../lib/api/operation.ts";
import { iso, timestamp } from "../../../lib/api/timestamps.ts";
import { recordListRead } from "../../../lib/audit/audit-log.ts";
import type { Principal } from "../../../lib/auth/jwt.ts";
import { auditLog, type AuditLogEntry } from "../../../lib/db/schema.ts";

const EXAMPLE = {
  id: "aud_1c2d3e4f5a6b4c7d8e9f0a1b2c3d4e5f",
  object: "audit-entry",
  action: "webhook.deleted",
  target: "wh_3e8a1f0c9b2d4e7f8a6c5b4d3e2f1a0b",
  account: "acc_4b1f9e2c7d8a4e6f9b0c1d2e3f4a5b6c",
  actor: { sub: "user_42", account: "acc_4b1f9e2c7d8a4e6f9b0c1d2e3f4a5b6c", role: null },
  detail: { skipped: 0 },
  created: "2026-12-01T09:30:00.000Z",
};

export const auditEntrySchema = z
  .strictObject({
    id: z.string().describe("`aud_…`"),
    object: z.literal("audit-entry"),
    action: z.string().describe("What was done, e.g. `webhook.deleted`, `dispatch.retried`, `dispatch.read`."),
    target: z.string().describe("The id of what it was done to."),
    account: z.string().nullable().describe("The account that owns the target; null for a global webhook."),
    actor: z
      .strictObject({
        sub: z.string().describe("The token's subject."),
        account: z.string().describe("The token's account."),
        role: z.enum(["admin", "support"]).nullable().describe("The token's role; null for neither."),
      })
      .describe("Who did it."),
    detail: z.record(z.string(), z.unknown()).describe("What the action changed or started (never a secret)."),
    created: timestamp,
  })
  .meta({ id: "AuditEntry", examples: [EXAMPLE] });

const auditQuery = z.strictObject({
  target: z.string().min(1).max(100).optional().describe("Only entries about this object."),
  account: z
    .string()
    .min(1)
    .max(100)
    .optional()
    .describe("Support only: entries about this account's objects (others always read their own account's)."),
  ...pageQuery,
});

/** The entries a principal reads: its account's (and the global webhooks' for an admin); any for support. */
function auditScope(principal: Principal, requested: string | undefined): SQL | undefined {
  if (principal.support) return requested ? eq(auditLog.account, requested) : undefined;
  const own = eq(auditLog.account, principal.account);
  return principal.admin ? or(own, isNull(auditLog.account)) : own;
}

function presentAuditEntry(row: AuditLogEntry): z.output<typeof auditEntrySchema> {
  return {
    id: row.id,
    object: "audit-entry",
    action: row.action,
    target: row.target,
    account: row.account,
    actor: {
      sub: row.actorSub,
      account: row.actorAccount,
      role: row.actorRole === "admin" || row.actorRole === "support" ? row.actorRole : null,
    },
    detail: row.detail,
    created: iso(row.createdAt),
  };
}

/** `GET /v3/audit-log`: who changed, retried, recovered or (support) read what, newest first. */
export function addAuditLog(router: OperationRouter): void {
  router.add(
    {
      method: "get",
      path: "/v3/audit-log",
      operationId: "listAuditLog",
      summary: "List the audit log",
      description:
        "Control-plane actions on the caller's account's objects (and the global webhooks' for an admin), newest first: every change to a webhook, retry, recovery and resend, and everything a support token read or did. Support reads every account's, and each account whose entries support read sees an `audit-log.read` for it.",
      tag: "Audit",
      query: auditQuery,
      responses: { 200: { description: "A page of audit entries.", schema: listOf(auditEntrySchema) } },
    },
    async (c, { query }) => {
      const database = c.get("database");
      const principal = c.get("principal");
      const rows = await readNewestFirst(database.db, auditLog, {
        scope: auditScope(principal, query.account),
        filter: query.target ? eq(auditLog.target, query.target) : undefined,
        limit: query.limit,
        cursor: query.cursor,
      });
      // Support reading another account's entries: on that account's record too.
      const shown = rows.slice(0, query.limit).map((row) => row.account);
      await recordListRead(
        database,
        principal,
        { action: "audit-log.read", target: "audit-log", detail: { target: query.target } },
        shown,
      );
      return c.json(listPage(rows, query.limit, presentAuditEntry));
    },
  );
}
