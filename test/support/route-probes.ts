import { randomBytes } from "node:crypto";
import { createApp } from "../../app/app.ts";
import { desc, eq, sql } from "drizzle-orm";
import {
  webhook as webhookTable,
  webhookDispatch,
  webhookNotification,
  webhookPoisonMessage,
} from "../../lib/db/schema.ts";
import { recordPoisonMessage } from "../../lib/db/sql/poison-messages.ts";
import { ROUTE_TOPIC } from "../../lib/webhook/outbound/webhook-out-queue-registrations.ts";
import { notifyOwner } from "../../lib/webhook/outbound/webhook-owner-notifier.ts";
import type { Hooklane } from "../../lib/hooklane.ts";
import type { Harness } from "./harness.ts";
import { eventToOneWebhook } from "./event-to-one-webhook.ts";
import { exhaustedDispatches } from "./outage-dispatches.ts";

/** The app's route table under `/v3`, as `METHOD /path`: registered up front, so no service is needed. */
export const V3_ROUTES: readonly string[] = [
  ...new Set(
    createApp({} as Hooklane)
      .routes.filter((route) => route.method !== "ALL" && route.path.startsWith("/v3/"))
      .map((route) => `${route.method} ${route.path}`),
  ),
];

/** The account every probe calls as. */
export const PROBE_ACCOUNT = "acc_probe";

/** Objects of `PROBE_ACCOUNT` the probes aim at: two of everything a list shows, so pages can be checked. */
export interface RouteFixture {
  paymentDebt: string;
  subscription: string;
  address: string;
  webhook: string;
  dispatch: string;
  recovery: string;
  resend: string;
  notification: string;
}

/** A valid request for one route: what a well-behaved client sends. */
export interface ProbeRequest {
  path: string;
  body?: Record<string, unknown>;
  /** Send as an admin of `PROBE_ACCOUNT`. */
  admin?: boolean;
}

export type RouteProbe = (harness: Harness, fixture: RouteFixture) => Promise<ProbeRequest> | ProbeRequest;

const unique = () => randomBytes(6).toString("hex");

/** Creates an object through the API and returns its id; throws when the API refuses. */
async function create(harness: Harness, path: string, body: unknown, admin = false): Promise<string> {
  const answer = await harness.call("POST", path, { account: PROBE_ACCOUNT, admin, body });
  if (answer.status !== 201) throw new Error(`POST ${path}: ${answer.status} ${answer.text}`);
  return answer.body.id;
}

const debt = { amount: "10.00", currency: "EUR" };
const portal = { frameAncestors: ["https://app.example.com"] };
const listenSession = { forwardTo: "http://127.0.0.1:4000/listen", events: ["*"] };
const address = { line1: "1 Main St", city: "Madrid", country: "ES" };

/**
 * Every `/v3` route of the app, as a request that succeeds. Routes that
 * delete or restart something make their own object first, so the probes
 * can run any number of times in any order. Suites that walk the route table
 * fail on a route missing here.
 */
export const ROUTE_PROBES: Record<string, RouteProbe> = {
  "POST /v3/accounts": () => ({ path: "/v3/accounts", admin: true, body: { id: `acc_${unique()}`, name: "Probe" } }),
  "PATCH /v3/accounts/:id": () => ({ path: `/v3/accounts/${PROBE_ACCOUNT}`, body: { name: "Probe Ltd" } }),
  "GET /v3/accounts/:id": () => ({ path: `/v3/accounts/${PROBE_ACCOUNT}` }),

  "POST /v3/payment-debts": () => ({ path: "/v3/payment-debts", body: debt }),
  "PATCH /v3/payment-debts/:id": (_, f) => ({ path: `/v3/payment-debts/${f.paymentDebt}`, body: { status: "paid" } }),
  "DELETE /v3/payment-debts/:id": async (h) => ({
    path: `/v3/payment-debts/${await create(h, "/v3/payment-debts", debt)}`,
  }),
  "GET /v3/payment-debts/:id": (_, f) => ({ path: `/v3/payment-debts/${f.paymentDebt}` }),
  "GET /v3/payment-debts": () => ({ path: "/v3/payment-debts" }),

  "POST /v3/subscriptions": () => ({ path: "/v3/subscriptions", body: { plan: "pro" } }),
  "PATCH /v3/subscriptions/:id": (_, f) => ({ path: `/v3/subscriptions/${f.subscription}`, body: { plan: "team" } }),
  "DELETE /v3/subscriptions/:id": async (h) => ({
    path: `/v3/subscriptions/${await create(h, "/v3/subscriptions", { plan: "trial" })}`,
  }),
  "GET /v3/subscriptions/:id": (_, f) => ({ path: `/v3/subscriptions/${f.subscription}` }),
  "POST /v3/subscriptions/:id/history": (_, f) => ({
    path: `/v3/subscriptions/${f.subscription}/history`,
    body: { change: "upgraded" },
  }),
  "GET /v3/subscriptions/:id/history": (_, f) => ({ path: `/v3/subscriptions/${f.subscription}/history` }),

  "POST /v3/general-addresses": () => ({ path: "/v3/general-addresses", body: address }),
  "PATCH /v3/general-addresses/:id": (_, f) => ({
    path: `/v3/general-addresses/${f.address}`,
    body: { city: "Sevilla" },
  }),
  "DELETE /v3/general-addresses/:id": async (h) => ({
    path: `/v3/general-addresses/${await create(h, "/v3/general-addresses", address)}`,
  }),
  "GET /v3/general-addresses/:id": (_, f) => ({ path: `/v3/general-addresses/${f.address}` }),

  "POST /v3/webhooks": () => ({
    path: "/v3/webhooks",
    body: { url: "http://127.0.0.1:4000/probe", events: ["payment-debt.created"] },
  }),
  "POST /v3/webhooks/filter-preview": () => ({
    path: "/v3/webhooks/filter-preview",
    body: { events: ["payment-debt.created"], filter: 'currency in ["EUR"]' },
  }),
  "POST /v3/webhook-signing-keys/rotate": () => ({ path: "/v3/webhook-signing-keys/rotate" }),
  // Two keys at least, so the list has pages.
  "GET /v3/webhook-signing-keys": async (h) => {
    const keys = await h.call("GET", "/v3/webhook-signing-keys?limit=2", { account: PROBE_ACCOUNT });
    for (let i = keys.body.data.length; i < 2; i++) await create(h, "/v3/webhook-signing-keys/rotate", {});
    return { path: "/v3/webhook-signing-keys" };
  },
  "GET /v3/webhooks": () => ({ path: "/v3/webhooks" }),
  "GET /v3/webhooks/:id": (_, f) => ({ path: `/v3/webhooks/${f.webhook}` }),
  "PATCH /v3/webhooks/:id": (_, f) => ({ path: `/v3/webhooks/${f.webhook}`, body: { description: "probed" } }),
  "DELETE /v3/webhooks/:id": async (h) => ({
    path: `/v3/webhooks/${await create(h, "/v3/webhooks", { url: "http://127.0.0.1:4000/gone", events: ["*"] })}`,
  }),
  "POST /v3/webhooks/:id/rotate-secret": (_, f) => ({ path: `/v3/webhooks/${f.webhook}/rotate-secret` }),
  "POST /v3/webhooks/:id/expire-previous-secret": (_, f) => ({
    path: `/v3/webhooks/${f.webhook}/expire-previous-secret`,
  }),
  "POST /v3/webhooks/:id/test": (_, f) => ({ path: `/v3/webhooks/${f.webhook}/test` }),
  // A webhook waiting for its endpoint's consent (nothing listens there: the answer records why not).
  "POST /v3/webhooks/:id/request-consent": async (h) => {
    const id = await create(h, "/v3/webhooks", { url: `http://127.0.0.1:4000/consent-${unique()}`, events: ["*"] });
    await h.hooklane.database.db
      .update(webhookTable)
      .set({ consentState: "pending", consentRequestedAt: sql`now()` })
      .where(eq(webhookTable.id, id));
    return { path: `/v3/webhooks/${id}/request-consent` };
  },
  "POST /v3/portal-sessions": () => ({ path: "/v3/portal-sessions", body: portal }),
  "GET /v3/portal-sessions": () => ({ path: "/v3/portal-sessions" }),
  "DELETE /v3/portal-sessions/:id": async (h) => ({
    path: `/v3/portal-sessions/${await create(h, "/v3/portal-sessions", portal)}`,
  }),
  // Another account's, by an admin: the probe account's own stay live for the list's pages.
  "POST /v3/portal-sessions/revoke-all": () => ({
    path: "/v3/portal-sessions/revoke-all",
    body: { account: "acc_probe_other" },
    admin: true,
  }),
  "GET /v3/webhooks/:id/dispatches": (_, f) => ({ path: `/v3/webhooks/${f.webhook}/dispatches` }),
  "GET /v3/webhook-dispatches/:id": (_, f) => ({ path: `/v3/webhook-dispatches/${f.dispatch}` }),
  "POST /v3/webhook-dispatches/:id/retry": async (h, f) => {
    // A finished dispatch of its own: a retried one is pending, and pending ones cannot be retried.
    const [row] = await h.hooklane.database.db
      .insert(webhookDispatch)
      .values(exhaustedDispatches(f.webhook, PROBE_ACCOUNT, 1, 60, unique()))
      .returning({ id: webhookDispatch.id });
    return { path: `/v3/webhook-dispatches/${row!.id}/retry` };
  },
  "POST /v3/webhooks/:id/recover": (_, f) => ({
    path: `/v3/webhooks/${f.webhook}/recover`,
    body: { since: new Date(Date.now() - 3_600_000).toISOString() },
  }),
  "GET /v3/webhooks/:id/recoveries": (_, f) => ({ path: `/v3/webhooks/${f.webhook}/recoveries` }),
  "GET /v3/webhooks/:id/recoveries/:recoveryId": (_, f) => ({
    path: `/v3/webhooks/${f.webhook}/recoveries/${f.recovery}`,
  }),
  "GET /v3/webhooks/:id/health": (_, f) => ({ path: `/v3/webhooks/${f.webhook}/health` }),
  "GET /v3/health-history": (_, f) => ({ path: `/v3/health-history?window=7d&webhook=${f.webhook}` }),
  "GET /v3/webhook-event-types": () => ({ path: "/v3/webhook-event-types" }),
  "GET /v3/lane": () => ({ path: "/v3/lane", admin: true }),

  "POST /v3/listen-sessions": () => ({ path: "/v3/listen-sessions", body: listenSession }),
  "GET /v3/listen-sessions/:id/stream": async (h) => {
    // An expired session: the stream says `ready`, then `end`, and closes, so the probe has an answer to read.
    const id = await create(h, "/v3/listen-sessions", listenSession);
    await h.hooklane.database.db
      .update(webhookTable)
      .set({ expiresAt: sql`now() - interval '1 second'` })
      .where(eq(webhookTable.id, id));
    return { path: `/v3/listen-sessions/${id}/stream` };
  },
  "POST /v3/listen-sessions/:id/results": async (h) => ({
    path: `/v3/listen-sessions/${await create(h, "/v3/listen-sessions", listenSession)}/results`,
    body: { results: [] },
  }),
  "DELETE /v3/listen-sessions/:id": async (h) => ({
    path: `/v3/listen-sessions/${await create(h, "/v3/listen-sessions", listenSession)}`,
  }),

  "GET /v3/webhook-dispatches": () => ({ path: "/v3/webhook-dispatches?type=webhook.test" }),
  "POST /v3/webhook-resends": () => ({
    path: "/v3/webhook-resends",
    body: { eventType: "webhook.test", since: new Date(Date.now() - 3_600_000).toISOString() },
  }),
  "GET /v3/webhook-resends/:id": (_, f) => ({ path: `/v3/webhook-resends/${f.resend}` }),
  "GET /v3/audit-log": () => ({ path: "/v3/audit-log" }),
  "GET /v3/events": (_, f) => ({ path: `/v3/events?webhook=${f.webhook}` }),
  "GET /v3/notifications": () => ({ path: "/v3/notifications" }),
  "GET /v3/notifications/:id": (_, f) => ({ path: `/v3/notifications/${f.notification}` }),
  "GET /v3/poison-messages": () => ({ path: "/v3/poison-messages", admin: true }),
  "POST /v3/poison-messages/:id/replay": async (h) => ({
    path: `/v3/poison-messages/${await poisonMessage(h)}/replay`,
    admin: true,
  }),
};

/** A route message the lane refused (as if the catalogue had not known its event then); returns its `pm_` id. */
async function poisonMessage(harness: Harness): Promise<string> {
  const message = {
    eventId: `evt_probe_${unique()}`,
    type: "account.created",
    resourceId: PROBE_ACCOUNT,
    occurredAt: new Date().toISOString(),
    livemode: true,
  };
  await recordPoisonMessage(harness.hooklane.database, ROUTE_TOPIC, message, "unknown event type");
  const [row] = await harness.hooklane.database.db
    .select({ id: webhookPoisonMessage.id })
    .from(webhookPoisonMessage)
    .orderBy(desc(webhookPoisonMessage.id))
    .limit(1);
  return `pm_${row!.id}`;
}

/** `PROBE_ACCOUNT` and two of each object it lists, through the API. */
export async function createRouteFixture(harness: Harness): Promise<RouteFixture> {
  await create(harness, "/v3/accounts", { id: PROBE_ACCOUNT, name: "Probe" }, true);
  const [paymentDebt] = [
    await create(harness, "/v3/payment-debts", debt),
    await create(harness, "/v3/payment-debts", debt),
  ];
  const subscription = await create(harness, "/v3/subscriptions", { plan: "pro" });
  for (const change of ["created", "upgraded"]) {
    await create(harness, `/v3/subscriptions/${subscription}/history`, { change });
  }
  const webhook = await create(harness, "/v3/webhooks", { url: "http://127.0.0.1:4000/hook", events: ["*"] });
  await create(harness, "/v3/webhooks", { url: "http://127.0.0.1:4000/other", events: ["*"] });
  for (let i = 0; i < 2; i++) await eventToOneWebhook(harness, webhook);
  const tests = [];
  for (let i = 0; i < 2; i++) {
    const answer = await harness.call("POST", `/v3/webhooks/${webhook}/test`, { account: PROBE_ACCOUNT });
    tests.push(answer.body.id as string);
  }
  const recovery = await harness.call("POST", `/v3/webhooks/${webhook}/recover`, {
    account: PROBE_ACCOUNT,
    body: { since: "2020-01-01T00:00:00Z" },
  });
  const resend = await harness.call("POST", "/v3/webhook-resends", {
    account: PROBE_ACCOUNT,
    body: { eventType: "webhook.test", since: "2020-01-01T00:00:00Z" },
  });
  await poisonMessage(harness);
  await poisonMessage(harness);
  await create(harness, "/v3/portal-sessions", portal);
  await create(harness, "/v3/portal-sessions", portal);
  // Two notifications of the webhook's owner, as the lane and the sweeper write them.
  for (const reason of ["probed", "probed again"]) {
    await notifyOwner(harness.hooklane.database, { webhookId: webhook, kind: "webhook.disabled", detail: { reason } });
  }
  const [note] = await harness.hooklane.database.db
    .select({ id: webhookNotification.id })
    .from(webhookNotification)
    .where(eq(webhookNotification.webhookId, webhook))
    .limit(1);
  return {
    paymentDebt: paymentDebt!,
    subscription,
    address: await create(harness, "/v3/general-addresses", address),
    webhook,
    dispatch: tests[0]!,
    recovery: recovery.body.id,
    resend: resend.body.id,
    notification: `ntf_${note!.id}`,
  };
}
