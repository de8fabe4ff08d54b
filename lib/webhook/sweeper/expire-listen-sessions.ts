import { deleteExpiredListenSessions } from "../../db/sql/listen-session-expiry.ts";
import type { SweeperTask } from "./sweeper-task.ts";

/**
 * Deletes listen sessions that outlived their CLI's last connection by
 * `WEBHOOK_LISTEN_TTL`, with their deliveries. The process that served the
 * last stream does this itself at expiry; this catches the sessions whose
 * process died too.
 */
export const expireListenSessionsTask: SweeperTask = {
  name: "expire-listen-sessions",
  async run({ hooklane }) {
    const deleted = await deleteExpiredListenSessions(hooklane.database);
    if (deleted.length > 0) {
      hooklane.subscriptions.invalidate();
      hooklane.logger.child({ component: "sweeper" }).info({ sessions: deleted }, "expired listen sessions deleted");
    }
    return false;
  },
};
