import { Hono } from "hono";
import type { HooklaneEnv } from "../../../lib/api/hono-env.ts";
import { accountRoutes } from "./accounts.ts";
import { generalAddressRoutes } from "./general-addresses.ts";
import { paymentDebtRoutes } from "./payment-debts.ts";
import { subscriptionHistoryRoutes } from "./subscription-history.ts";
import { subscriptionRoutes } from "./subscriptions.ts";

/**
 * The API's own resources, every route registered with its full `/v3/...`
 * template so that, mounted at "/", `c.req.routePath` is the catalogue's route.
 * Expects `requireAuth` to have run.
 */
export function resourceRoutes(): Hono<HooklaneEnv> {
  return new Hono<HooklaneEnv>()
    .route("/", accountRoutes())
    .route("/", paymentDebtRoutes())
    .route("/", subscriptionRoutes())
    .route("/", subscriptionHistoryRoutes())
    .route("/", generalAddressRoutes());
}
