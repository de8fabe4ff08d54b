import type { CatalogueEntry } from "./catalogue-entry.ts";
import { WEBHOOK_EVENT_CATALOGUE } from "./webhook-event-catalogue.data.ts";

/** Every event of the catalogue, sorted by internal name. Built from generated data: no I/O. */
export const CATALOGUE: readonly CatalogueEntry[] = WEBHOOK_EVENT_CATALOGUE;

// Looked up on every 2xx mutation, so a Map rather than a scan.
const byRoute = new Map(CATALOGUE.map((entry) => [`${entry.method} ${entry.route}`, entry]));
const byInternal = new Map(CATALOGUE.map((entry) => [entry.internal, entry]));

/**
 * The event a route emits, from the request method as Hono reports it
 * (upper-case) and the route template (`c.req.routePath`, e.g.
 * `/v3/payment-debts/:id`); undefined for a route that emits none.
 */
export function catalogueByRoute(method: string, route: string): CatalogueEntry | undefined {
  return byRoute.get(`${method} ${route}`);
}

/** The event with this internal name (`payment-debt.created`), or undefined. */
export function catalogueByInternal(internal: string): CatalogueEntry | undefined {
  return byInternal.get(internal);
}
