import { and, eq, isNull, or, sql, type SQL } from "drizzle-orm";
import { notFound } from "../api/problem.ts";
import type { Principal } from "../auth/jwt.ts";
import type { Database } from "../db/client.ts";
import { webhook, webhookDispatch, type Webhook } from "../db/schema.ts";

/** What a route lets a caller reach beyond its own account's live webhooks. */
export interface ScopeOptions {
  /**
   * A `support` token reaches every account's webhooks here: the route only
   * reads a delivery log or starts deliveries over (never a secret, never a
   * change to a webhook), and audits what support does.
   */
  support?: boolean;
  /** Deleted webhooks count too: their delivery log stays readable until retention prunes it. */
  deleted?: boolean;
}

/**
 * The webhooks a principal may see: its account's, plus the global ones for
 * an admin, every account's for support where the route allows it. Deleted
 * webhooks are left out unless asked for. Every control-plane query goes
 * through this, so another account's webhook reads as absent (404), never as
 * forbidden.
 */
export function webhookScope(principal: Principal, options: ScopeOptions = {}): SQL {
  const live = options.deleted ? undefined : isNull(webhook.deletedAt);
  if (principal.support && options.support) return live ?? sql`true`;
  const own = eq(webhook.account, principal.account);
  return and(principal.admin ? or(own, isNull(webhook.account))! : own, live)!;
}

export const webhookInScope = (principal: Principal, id: string, options: ScopeOptions = {}): SQL =>
  and(eq(webhook.id, id), webhookScope(principal, options))!;

/** The webhook `id` if `principal` may see it; throws a 404 ApiError otherwise, whether it exists or not. */
export async function findWebhook(
  database: Database,
  principal: Principal,
  id: string,
  options: ScopeOptions = {},
): Promise<Webhook> {
  const [row] = await database.db
    .select()
    .from(webhook)
    .where(webhookInScope(principal, id, options));
  if (!row) throw notFound("webhook");
  return row;
}

/** The dispatch `id`, if it belongs to a webhook `principal` may see: scoped by the webhook, not by the event. */
export const dispatchInScope = (principal: Principal, id: string, options: ScopeOptions = {}): SQL =>
  and(
    eq(webhookDispatch.id, id),
    sql`${webhookDispatch.webhookId} in (select ${webhook.id} from ${webhook} where ${webhookScope(principal, options)})`,
  )!;
