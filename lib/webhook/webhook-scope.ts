import { and, eq, isNull, or, type SQL } from "drizzle-orm";
import type { Principal } from "../auth/jwt.ts";
import { webhook } from "../db/schema.ts";

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
