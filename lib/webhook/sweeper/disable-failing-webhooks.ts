import { disableFailingWebhooks } from "../../db/sql/disable-failing-webhooks.ts";
import { notifyOwner } from "../outbound/webhook-owner-notifier.ts";
import type { SweeperTask } from "./sweeper-task.ts";

const DAY_MS = 86_400_000;

/**
 * The auto-disable rule: a webhook that failed every delivery for
 * `WEBHOOK_DISABLE_AFTER` (7 days by default) is disabled and its owner
 * notified. Its events are kept and go out once it is re-enabled.
 */
export const disableFailingWebhooksTask: SweeperTask = {
  name: "disable-failing-webhooks",
  async run({ hooklane, now }) {
    const windowMs = hooklane.config.disableAfterMs;
    const span = windowMs % DAY_MS === 0 ? `${windowMs / DAY_MS} days` : `${Math.round(windowMs / 60_000)} minutes`;
    const reason = `every delivery failed for ${span}`;
    // The disable and its notification commit together: a crash between them cannot lose the owner's mail.
    await hooklane.database.transaction(async (tx) => {
      const disabled = await disableFailingWebhooks(tx, { now: now(), windowMs, reason });
      for (const webhookId of disabled) {
        await notifyOwner(tx, { webhookId, kind: "webhook.disabled", detail: { reason } });
      }
    });
    return false;
  },
};
