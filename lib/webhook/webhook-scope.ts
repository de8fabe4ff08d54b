import { and, eq, isNull, or, sql, type SQL } from "drizzle-orm";
import { notFound } from "../api/problem.ts";
import type { Principal } from "../auth/jwt.ts";
import type { Database } from "../db/client.ts";
import { webhook, webhookDispatch, type Webhook } from "../db/schema.ts";

/**
 * The webhooks a principal may see: its account's, plus the global ones for
 * an admin. Every control-plane query goes through this, so another
 * account's webhook reads as absent (404), never as forbidden.
 */
export function webhookScope(principal: Principal): SQL {
  const own = eq(webhook.account, principal.account);
  return principal.admin ? or(own, isNull(webhook.account))! : own;
}

export const webhookInScope = (principal: Principal, id: string): SQL =>
  and(eq(webhook.id, id), webhookScope(principal))!;

/** The webhook `id` if `principal` may see it; throws a 404 ApiError otherwise, whether it exists or not. */
export async function findWebhook(database: Database, principal: Principal, id: string): Promise<Webhook> {
  const [row] = await database.db.select().from(webhook).where(webhookInScope(principal, id));
  if (!row) throw notFound("webhook");
  return row;
}

/** The dispatch `id`, if it belongs to a webhook `principal` may see: scoped by the webhook, not by the event. */
export const dispatchInScope = (principal: Principal, id: string): SQL =>
  and(
    eq(webhookDispatch.id, id),
    sql`${webhookDispatch.webhookId} in (select ${webhook.id} from ${webhook} where ${webhookScope(principal)})`,
  )!;
