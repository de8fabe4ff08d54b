import { operationRouter, type OperationRouter } from "../../../lib/api/operation.ts";
import { addAccountRoutes } from "./accounts.ts";
import { addGeneralAddressRoutes } from "./general-addresses.ts";
import { addPaymentDebtRoutes } from "./payment-debts.ts";
import { addSubscriptionHistoryRoutes } from "./subscription-history.ts";
import { addSubscriptionRoutes } from "./subscriptions.ts";
import { addWebhookRoutes } from "./webhooks.ts";

/**
 * The API's own resources, every route a described operation registered with
 * its full `/v3/...` template so that, mounted at "/", `c.req.routePath` is
 * the catalogue's route. Expects `requireAuth` to have run.
 */
export function addResourceRoutes(router: OperationRouter): void {
  addAccountRoutes(router);
  addPaymentDebtRoutes(router);
  addSubscriptionRoutes(router);
  addSubscriptionHistoryRoutes(router);
  addGeneralAddressRoutes(router);
}

/** Every `/v3` route: the resources and the webhooks control plane, all in `/openapi.json`. */
export function v3Routes(): OperationRouter {
  const router = operationRouter();
  addResourceRoutes(router);
  addWebhookRoutes(router);
  return router;
}
