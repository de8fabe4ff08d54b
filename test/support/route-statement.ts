import type { RouteAndClaimOptions } from "../../lib/db/sql/route-and-claim.ts";
import { ROUTE_RULES_JSON } from "../../lib/webhook/outbound/webhook-out-route.handler.ts";

/** In-flight caps a test of the route statement reaches only when it lowers one. */
export const ROUTE_TEST_CAPS = { perWebhook: 100, perOrigin: 100, perAccount: 100 };

/** The lane's step as worker w1 runs it: ten route jobs at most, claiming none of the dispatches. */
export function routeStatementOptions(overrides: Partial<RouteAndClaimOptions> = {}): RouteAndClaimOptions {
  return {
    workerId: "w1",
    routeLimit: 10,
    routeLeaseMs: 60_000,
    rulesJson: ROUTE_RULES_JSON,
    claimLimit: 0,
    leaseMs: 60_000,
    caps: ROUTE_TEST_CAPS,
    after: "",
    held: {},
    ...overrides,
  };
}
