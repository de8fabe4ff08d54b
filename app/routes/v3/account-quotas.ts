import { QuotaExceededError } from "../../../lib/api/problem.ts";
import type { Config } from "../../../lib/config/env.ts";
import type { Database } from "../../../lib/db/client.ts";
import type { RecoveryKind } from "../../../lib/db/schema.ts";
import { countOpenRecoveries, countWebhooks, recentTestEvents } from "../../../lib/db/sql/account-usage.ts";

/**
 * What one account may ask of the lane (`WEBHOOK_QUOTA_*`), so no tenant can
 * hurt the others through the control plane. Each check throws
 * QuotaExceededError (429 with `Retry-After`) when the quota is used up.
 * Checks count what exists: two requests racing may both pass by one.
 */
export const accountQuotas = {
  /** Another webhook for `account` (null: the global ones). Deleting one makes room. */
  async webhook(database: Database, config: Config, account: string | null): Promise<void> {
    const limit = config.quotas.webhooks;
    if ((await countWebhooks(database, account)) < limit) return;
    throw new QuotaExceededError(
      "webhooks",
      limit,
      `This account has ${limit} webhooks, its quota (WEBHOOK_QUOTA_WEBHOOKS); delete one first.`,
      60,
    );
  },

  /** Another test event for one of `account`'s webhooks; the quota is per hour. */
  async testEvent(database: Database, config: Config, account: string | null): Promise<void> {
    const limit = config.quotas.testEventsPerHour;
    const recent = await recentTestEvents(database, account);
    if (recent.count < limit) return;
    throw new QuotaExceededError(
      "test-events",
      limit,
      `This account sent ${recent.count} test events in the last hour; its quota is ${limit} an hour.`,
      recent.oldestLeavesInSeconds,
    );
  },

  /** Another bulk recovery (or resend, counted apart) while `account`'s others are unfinished. */
  async recovery(
    database: Database,
    config: Config,
    account: string | null,
    kind: RecoveryKind = "recover",
  ): Promise<void> {
    const limit = config.quotas.openRecoveries;
    if ((await countOpenRecoveries(database, account, kind)) < limit) return;
    throw new QuotaExceededError(
      "recoveries",
      limit,
      `This account has ${limit} recoveries still running, its quota; follow their progress and try again.`,
      30,
    );
  },
};
