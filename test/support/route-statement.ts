import type { RouteJobsOptions } from "../../lib/db/sql/route-jobs.ts";
import { ROUTE_RULES_JSON } from "../../lib/webhook/outbound/webhook-out-route.handler.ts";

/** In-flight caps a test of the route statement reaches only when it lowers one. */
export const ROUTE_TEST_CAPS = { perWebhook: 100, perOrigin: 100, perAccount: 100 };

/** The route loop's statement as worker w1 runs it: ten jobs at most, leasing none of the new dispatches. */
export function routeStatementOptions(overrides: Partial<RouteJobsOptions> = {}): RouteJobsOptions {
  return {
    workerId: "w1",
    limit: 10,
    routeLeaseMs: 60_000,
    rulesJson: ROUTE_RULES_JSON,
    claimLimit: 0,
    leaseMs: 60_000,
    caps: ROUTE_TEST_CAPS,
    largeFanOut: 1_000,
    ...overrides,
  };
}
