import { takeDueConsentRequests } from "../../db/sql/endpoint-consent.ts";
import { forEachBounded } from "../../for-each-bounded.ts";
import { askConsent, CONSENT_LEASE_MS, withConsentDeps } from "../outbound/endpoint-consent.ts";
import type { SweeperTask } from "./sweeper-task.ts";

/** Consent requests taken per step, and sent at once. */
export const CONSENT_BATCH = 20;
const CONSENT_PARALLEL = 8;

/**
 * Sends the consent requests that are due (a new webhook's or a new URL's, and the schedule's next ones) and
 * records each answer; an endpoint that consents has its held events sent at once (the lane is woken). Runs again
 * while a batch was full.
 */
export const requestConsentTask: SweeperTask = {
  name: "request-consent",
  async run({ hooklane }) {
    const { database, transport, logger } = hooklane;
    const due = await takeDueConsentRequests(database, { limit: CONSENT_BATCH, leaseMs: CONSENT_LEASE_MS });
    if (due.length === 0) return false;
    let granted = 0;
    await withConsentDeps(hooklane, (deps) =>
      forEachBounded(due, CONSENT_PARALLEL, async (subject) => {
        const { state, error } = await askConsent(deps, subject);
        if (state === "granted") granted++;
        else if (state === "pending") {
          logger
            .child({ component: "sweeper" })
            .info({ webhookId: subject.id, attempt: subject.attempts + 1, error }, "endpoint has not consented");
        }
      }),
    );
    // Their held events are due: deliver them now rather than at the lane's next idle check.
    if (granted > 0) await transport.sendDeliver([]);
    return due.length === CONSENT_BATCH;
  },
};
