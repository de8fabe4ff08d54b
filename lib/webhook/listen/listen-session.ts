import type { BreakerRule } from "../../db/sql/record-attempts.ts";
import { and, eq } from "drizzle-orm";
import { notFound } from "../../api/problem.ts";
import type { Principal } from "../../auth/jwt.ts";
import type { Database } from "../../db/client.ts";
import { webhook, type Webhook } from "../../db/schema.ts";
import { webhookInScope } from "../webhook-scope.ts";

/** The listen streams' timing, as data. */
export const LISTEN = {
  /** A pushed delivery's lease: the CLI's POST (10 s at most) and its report, with room to spare. */
  leaseMs: 30_000,
  /**
   * Longest idle wait of a stream (each is 50-100 % of it): bounds how late a missed wake-up is noticed. Work is
   * announced (a NOTIFY naming the session) or foreseen (the next retry or lease falling due): a safety net, not a poll.
   */
  maxIdleMs: 10_000,
} as const;

/**
 * The worker ids a session's streams lease its dispatches under: every
 * stream gets its own, and a report is only recorded under one of these.
 */
export const listenWorkerPrefix = (webhookId: string) => `listen/${webhookId}/`;

/** The listen session `id` (its webhook) if `principal` may see it; a 404 ApiError otherwise. */
export async function findListenSession(database: Database, principal: Principal, id: string): Promise<Webhook> {
  const [row] = await database.db
    .select()
    .from(webhook)
    .where(and(webhookInScope(principal, id), eq(webhook.status, "listening")));
  if (!row) throw notFound("listen session");
  return row;
}

/**
 * A listen session's receiver is a developer's local server behind the CLI:
 * nothing is probed, so its breaker never opens (its failures still follow RETRY).
 */
export function listenBreaker(rule: BreakerRule): BreakerRule {
  return { ...rule, threshold: 2_147_483_647 };
}
