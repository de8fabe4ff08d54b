import { Hono } from "hono";
import type { HooklaneEnv } from "../../../lib/api/hono-env.ts";
import type { Principal } from "../../../lib/auth/jwt.ts";
import { openDatabase, type Database } from "../../../lib/db/client.ts";
import { account } from "../../../lib/db/schema.ts";
import type { Hooklane } from "../../../lib/hooklane.ts";
import { catalogueByRoute } from "../../../lib/webhook/catalogue/webhook-event-catalogue.ts";
import type { RouteMessage } from "../../../lib/webhook/outbound/webhook-out-queue-registrations.ts";
import type { ApiEventPublisher, ApiTransaction } from "../../../lib/webhook/outbound/webhook-out-route.publisher.ts";
import { operationRouter } from "../../../lib/api/operation.ts";
import { addResourceRoutes } from "./index.ts";

/** A published transaction as the publisher will read it: the catalogue event and the resource id. */
export interface PublishedEvent {
  type: string | undefined;
  id: unknown;
}

/** A Response whose JSON body tests may read without declaring its type. */
export interface TestResponse {
  status: number;
  headers: Headers;
  // Bodies are checked with expect(), so typing them would only repeat the assertions.
  json(): Promise<any>;
}

/** The v3 resource routes over a throwaway PGlite, for the route tests beside them. */
export interface ResourceTestApi {
  database: Database;
  /** An admin, and two users of two different accounts. */
  admin: Principal;
  alice: Principal;
  bob: Principal;
  /** Sends a request as `principal` (what `requireAuth` would have set); `body` goes as JSON. */
  call(principal: Principal, method: string, path: string, body?: unknown): Promise<TestResponse>;
  /** Inserts an account and returns a principal of that account. */
  principalOf(name: string, options?: { admin?: boolean }): Promise<Principal>;
  /** Every transaction `ok()` published so far, resolved through the catalogue. */
  events(): PublishedEvent[];
}

/** Builds the test API; close it with `database.close()`. */
export async function resourceTestApi(): Promise<ResourceTestApi> {
  const database = await openDatabase({ pgliteDataDir: "memory://" });
  const published: ApiTransaction[] = [];
  // Everyone listens to everything: each published transaction is kept, and nothing is carried.
  const publisher: Pick<ApiEventPublisher, "enabled" | "subscribedEvent" | "publish" | "publishesAhead" | "committed"> =
    {
      enabled: true,
      subscribedEvent: async (method, route) => catalogueByRoute(method, route),
      async publish(_tx, _entry, transaction) {
        published.push(transaction);
        return { message: {} as RouteMessage, jobId: 0 };
      },
      // Published once the route answered, with the answer's body, never ahead of its statements.
      publishesAhead: () => false,
      committed: () => {},
    };
  // Accounts read only whether new ones must have their endpoints consent.
  const config = { consent: { newAccounts: false, origin: "hooklane" } };
  const hooklane = { database, publisher, config } as unknown as Hooklane;

  const app = new Hono<HooklaneEnv>();
  app.use(async (c, next) => {
    c.set("hooklane", hooklane);
    c.set("principal", JSON.parse(c.req.header("x-test-principal") ?? "null") as Principal);
    await next();
  });
  const router = operationRouter();
  addResourceRoutes(router);
  app.route("/", router.app);

  const principalOf: ResourceTestApi["principalOf"] = async (name, options = {}) => {
    const [row] = await database.db.insert(account).values({ name }).returning();
    return { sub: `user-of-${name}`, account: row!.id, admin: options.admin ?? false, support: false };
  };

  return {
    database,
    admin: await principalOf("operator", { admin: true }),
    alice: await principalOf("alice"),
    bob: await principalOf("bob"),
    principalOf,
    call: async (principal, method, path, body) =>
      app.request(path, {
        method,
        headers: { "content-type": "application/json", "x-test-principal": JSON.stringify(principal) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      }),
    events: () =>
      published.map((transaction) => {
        const entry = catalogueByRoute(transaction.method, transaction.route);
        if (!entry) return { type: undefined, id: undefined };
        const source =
          entry.idFrom.source === "param" ? transaction.params : (transaction.body as Record<string, unknown>);
        return { type: entry.internal, id: source[entry.idFrom.name] };
      }),
  };
}
