import type { Principal } from "../auth/jwt.ts";
import { roleOf } from "../auth/jwt.ts";
import type { Database } from "../db/client.ts";
import { auditLog } from "../db/schema.ts";

/** Control-plane actions the audit log records. */
export type AuditAction =
  | "webhook.created"
  | "webhook.updated"
  | "webhook.deleted"
  | "webhook.secret-rotated"
  | "webhook.previous-secret-expired"
  | "webhook.consent-requested"
  | "webhook-signing-key.rotated"
  | "webhook.test-sent"
  | "webhook.read"
  | "webhook.log-read"
  | "webhook.health-read"
  | "dispatch.read"
  | "dispatch.retried"
  | "dispatches.searched"
  | "recovery.started"
  | "recovery.read"
  | "resend.started"
  | "resend.read"
  | "notification.read"
  | "audit-log.read"
  | "poison.replayed"
  | "portal-session.created"
  | "portal-session.revoked"
  | "portal-sessions.revoked";

/** Actions that change something: audited whoever takes them. The others (reads) are audited for support only. */
const READS = new Set<AuditAction>([
  "webhook.read",
  "webhook.log-read",
  "webhook.health-read",
  "dispatch.read",
  "dispatches.searched",
  "recovery.read",
  "resend.read",
  "notification.read",
  "audit-log.read",
]);

/**
 * Records one control-plane action: who (`sub`, account, role), on what
 * (`target`, owned by `account`; null for a global webhook), when. A change is
 * always recorded; a read only when support made it, so what support saw of
 * a customer's deliveries is on record. Written with the caller's database
 * handle, inside its transaction when it has one.
 */
export async function recordAudit(
  database: Database,
  principal: Principal,
  entry: { action: AuditAction; target: string; account: string | null; detail?: Record<string, unknown> },
): Promise<void> {
  if (READS.has(entry.action) && !principal.support) return;
  await database.db.insert(auditLog).values(auditRow(principal, entry));
}

/** The row of one entry: who (`principal`) did what to what. */
function auditRow(
  principal: Principal,
  entry: { action: AuditAction; target: string; account: string | null; detail?: Record<string, unknown> },
) {
  return {
    account: entry.account,
    actorSub: principal.sub,
    actorAccount: principal.account,
    actorRole: roleOf(principal) ?? null,
    action: entry.action,
    target: entry.target,
    detail: entry.detail ?? {},
  };
}

/**
 * Records support's read of one page of a list under every account whose
 * rows it showed (`accounts`: each row's; null for a global webhook's), one
 * entry per account with how many rows were its, so each sees what support
 * saw of it. Rows of support's own account are left out, so a page of
 * nothing else records nothing; reads by anyone but support never are.
 */
export async function recordListRead(
  database: Database,
  principal: Principal,
  entry: { action: AuditAction; target: string; detail?: Record<string, unknown> },
  accounts: readonly (string | null)[],
): Promise<void> {
  if (!principal.support) return;
  const shown = new Map<string | null, number>();
  for (const account of accounts) {
    if (account !== principal.account) shown.set(account, (shown.get(account) ?? 0) + 1);
  }
  if (shown.size === 0) return;
  await database.db
    .insert(auditLog)
    .values(
      [...shown].map(([account, rows]) =>
        auditRow(principal, { ...entry, account, detail: { ...entry.detail, rows } }),
      ),
    );
}
