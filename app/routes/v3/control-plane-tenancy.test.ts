import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { webhook, webhookAttempt, webhookNotification } from "../../../lib/db/schema.ts";
import { notifyOwner } from "../../../lib/webhook/outbound/webhook-owner-notifier.ts";
import type { Hooklane } from "../../../lib/hooklane.ts";
import { eventually } from "../../../test/support/eventually.ts";
import { HARNESS_START_MS, pgliteFactory, startHarness, type Harness } from "../../../test/support/harness.ts";
import { startReceiver, type TestReceiver } from "../../../test/support/receiver.ts";
import { createApp } from "../../app.ts";
import { isTenantScopedPath } from "./webhooks.ts";

/** Account A's objects, which account B must never reach. */
interface Fixture {
  webhookId: string;
  dispatchId: string;
  eventId: string;
  recoveryId: string;
  resendId: string;
  notificationId: string;
  sessionId: string;
  portalSessionId: string;
  /** Where every webhook of the test points (loopback). */
  receiverUrl: string;
  /** Strings only A's data contains: none may appear in an answer to B. */
  secrets: string[];
  /** A's signing secrets: never in an answer to anyone else, support included. */
  signingSecrets: string[];
}

interface Probe {
  /** `object`: names one of A's objects, so B gets 404. `collection`: B's own list or creation, without A's data. */
  kind: "object" | "collection";
  /** Answers with an endless stream: only its status is read. */
  stream?: true;
  /**
   * A support token reaches A's object here (reads, retries, recoveries): it
   * answers 2xx, shows no signing secret, and lands in A's audit log as this
   * action. Everywhere else support is an ordinary user of its own account.
   */
  support?: string;
  request(f: Fixture): { path: string; body?: unknown };
}

/**
 * Every control-plane route, as a request aimed at account A's objects. A
 * route the app has and this table lacks fails the test: adding a route means
 * saying here how it is scoped.
 */
const PROBES: Record<string, Probe> = {
  "POST /v3/webhooks": {
    kind: "collection",
    request: (f) => ({ path: "/v3/webhooks", body: { url: `${f.receiverUrl}/others`, events: ["*"] } }),
  },
  "POST /v3/webhooks/filter-preview": {
    kind: "collection",
    request: () => ({
      path: "/v3/webhooks/filter-preview",
      body: { events: ["payment-debt.created"], filter: 'currency in ["EUR"]' },
    }),
  },
  "POST /v3/webhook-signing-keys/rotate": {
    kind: "collection",
    request: () => ({ path: "/v3/webhook-signing-keys/rotate" }),
  },
  "GET /v3/webhook-signing-keys": {
    kind: "collection",
    request: () => ({ path: "/v3/webhook-signing-keys?limit=100" }),
  },
  "GET /v3/webhooks": {
    kind: "collection",
    support: "webhook.read",
    request: () => ({ path: "/v3/webhooks?limit=100" }),
  },
  "GET /v3/webhooks/:id": {
    kind: "object",
    support: "webhook.read",
    request: (f) => ({ path: `/v3/webhooks/${f.webhookId}` }),
  },
  "PATCH /v3/webhooks/:id": {
    kind: "object",
    request: (f) => ({ path: `/v3/webhooks/${f.webhookId}`, body: { description: "taken over" } }),
  },
  "POST /v3/webhooks/:id/rotate-secret": {
    kind: "object",
    request: (f) => ({ path: `/v3/webhooks/${f.webhookId}/rotate-secret` }),
  },
  "POST /v3/webhooks/:id/expire-previous-secret": {
    kind: "object",
    request: (f) => ({ path: `/v3/webhooks/${f.webhookId}/expire-previous-secret` }),
  },
  "POST /v3/webhooks/:id/request-consent": {
    kind: "object",
    request: (f) => ({ path: `/v3/webhooks/${f.webhookId}/request-consent` }),
  },
  "POST /v3/webhooks/:id/test": { kind: "object", request: (f) => ({ path: `/v3/webhooks/${f.webhookId}/test` }) },
  "GET /v3/webhooks/:id/dispatches": {
    kind: "object",
    support: "webhook.log-read",
    request: (f) => ({ path: `/v3/webhooks/${f.webhookId}/dispatches` }),
  },
  "GET /v3/webhooks/:id/health": {
    kind: "object",
    support: "webhook.health-read",
    request: (f) => ({ path: `/v3/webhooks/${f.webhookId}/health` }),
  },
  "GET /v3/webhook-dispatches/:id": {
    kind: "object",
    support: "dispatch.read",
    request: (f) => ({ path: `/v3/webhook-dispatches/${f.dispatchId}` }),
  },
  "POST /v3/webhook-dispatches/:id/retry": {
    kind: "object",
    support: "dispatch.retried",
    request: (f) => ({ path: `/v3/webhook-dispatches/${f.dispatchId}/retry` }),
  },
  "POST /v3/webhooks/:id/recover": {
    kind: "object",
    support: "recovery.started",
    request: (f) => ({ path: `/v3/webhooks/${f.webhookId}/recover`, body: { since: "2020-01-01T00:00:00Z" } }),
  },
  "GET /v3/webhooks/:id/recoveries": {
    kind: "object",
    support: "recovery.read",
    request: (f) => ({ path: `/v3/webhooks/${f.webhookId}/recoveries` }),
  },
  "GET /v3/health-history": {
    kind: "object",
    support: "webhook.health-read",
    request: (f) => ({ path: `/v3/health-history?window=7d&webhook=${f.webhookId}` }),
  },
  "GET /v3/events": {
    kind: "object",
    support: "webhook.log-read",
    request: (f) => ({ path: `/v3/events?webhook=${f.webhookId}` }),
  },
  "GET /v3/webhooks/:id/recoveries/:recoveryId": {
    kind: "object",
    support: "recovery.read",
    request: (f) => ({ path: `/v3/webhooks/${f.webhookId}/recoveries/${f.recoveryId}` }),
  },
  "DELETE /v3/webhooks/:id": { kind: "object", request: (f) => ({ path: `/v3/webhooks/${f.webhookId}` }) },
  "GET /v3/webhook-dispatches": {
    kind: "collection",
    support: "dispatches.searched",
    request: (f) => ({ path: `/v3/webhook-dispatches?eventId=${f.eventId}` }),
  },
  "POST /v3/webhook-resends": {
    kind: "collection",
    request: () => ({
      path: "/v3/webhook-resends",
      body: { eventType: "webhook.test", since: "2020-01-01T00:00:00Z" },
    }),
  },
  "GET /v3/webhook-resends/:id": {
    kind: "object",
    support: "resend.read",
    request: (f) => ({ path: `/v3/webhook-resends/${f.resendId}` }),
  },
  "GET /v3/audit-log": {
    kind: "collection",
    support: "audit-log.read",
    request: () => ({ path: "/v3/audit-log?limit=100" }),
  },
  "GET /v3/notifications": {
    kind: "collection",
    support: "notification.read",
    request: () => ({ path: "/v3/notifications?limit=100" }),
  },
  "GET /v3/notifications/:id": {
    kind: "object",
    support: "notification.read",
    request: (f) => ({ path: `/v3/notifications/${f.notificationId}` }),
  },
  "POST /v3/listen-sessions": {
    kind: "collection",
    request: (f) => ({ path: "/v3/listen-sessions", body: { forwardTo: `${f.receiverUrl}/listening` } }),
  },
  "GET /v3/listen-sessions/:id/stream": {
    kind: "object",
    stream: true,
    request: (f) => ({ path: `/v3/listen-sessions/${f.sessionId}/stream` }),
  },
  "POST /v3/listen-sessions/:id/results": {
    kind: "object",
    request: (f) => ({ path: `/v3/listen-sessions/${f.sessionId}/results`, body: { results: [] } }),
  },
  "DELETE /v3/listen-sessions/:id": {
    kind: "object",
    request: (f) => ({ path: `/v3/listen-sessions/${f.sessionId}` }),
  },
  "POST /v3/portal-sessions": {
    kind: "collection",
    request: () => ({ path: "/v3/portal-sessions", body: { frameAncestors: ["https://app.example.com"] } }),
  },
  "GET /v3/portal-sessions": { kind: "collection", request: () => ({ path: "/v3/portal-sessions?limit=100" }) },
  "POST /v3/portal-sessions/revoke-all": {
    kind: "collection",
    request: () => ({ path: "/v3/portal-sessions/revoke-all" }),
  },
  "DELETE /v3/portal-sessions/:id": {
    kind: "object",
    request: (f) => ({ path: `/v3/portal-sessions/${f.portalSessionId}` }),
  },
};

// Routes are registered up front; the services are only read per request.
const controlPlaneRoutes = [
  ...new Set(
    createApp({} as Hooklane)
      .routes.filter((route) => route.method !== "ALL" && isTenantScopedPath(route.path))
      .map((route) => `${route.method} ${route.path}`),
  ),
];

const A = { account: "acc_tenant_a" };
const SUPPORT = { account: "acc_tenant_b", support: true, sub: "support-agent-7" };
const OTHERS = [
  { name: "a user of account B", account: "acc_tenant_b", admin: false },
  { name: "an admin of account B", account: "acc_tenant_b", admin: true },
];
describe("tenancy of the control plane", () => {
  it("has a probe for every control-plane route of the app, and none for a route it lacks", () => {
    expect(controlPlaneRoutes.length).toBeGreaterThanOrEqual(16);
    expect(controlPlaneRoutes.filter((route) => !(route in PROBES))).toEqual([]);
    expect(Object.keys(PROBES).filter((route) => !controlPlaneRoutes.includes(route))).toEqual([]);
  });

  describe("account B on account A's objects", () => {
    let harness: Harness;
    let receiver: TestReceiver;
    let fixture: Fixture;

    /** Calls `route` as its probe says; a stream's body is dropped once its status is known. */
    async function callProbe(
      route: string,
      who: { account: string; admin?: boolean; support?: boolean; sub?: string },
    ) {
      const probe = PROBES[route]!;
      const method = route.split(" ")[0]!;
      const { path, body } = probe.request(fixture);
      const options = { ...who, ...(body === undefined ? {} : { body }) };
      if (!probe.stream) return harness.call(method, path, options);
      const response = await harness.request(method, path, options);
      const text = response.status === 200 ? (await response.body?.cancel(), "") : await response.text();
      return { status: response.status, body: text ? JSON.parse(text) : undefined };
    }

    beforeAll(async () => {
      receiver = await startReceiver();
      harness = await startHarness(pgliteFactory, { env: { WEBHOOK_TIMEOUT_MS: "10000" } });
      await harness.accounts(A.account, "acc_tenant_b");
      const created = await harness.call("POST", "/v3/webhooks", {
        ...A,
        body: { url: `${receiver.url}/only-a-knows-this-path`, events: ["*"], description: "a's private note" },
      });
      const test = await harness.call("POST", `/v3/webhooks/${created.body.id}/test`, A);
      await eventually(
        () =>
          harness.hooklane.database.db.select().from(webhookAttempt).where(eq(webhookAttempt.dispatchId, test.body.id)),
        (rows) => rows.length === 1,
      );
      const recovery = await harness.call("POST", `/v3/webhooks/${created.body.id}/recover`, {
        ...A,
        body: { since: "2020-01-01T00:00:00Z" },
      });
      const aNotification = async (webhookId: string) => {
        await notifyOwner(harness.hooklane.database, {
          webhookId,
          kind: "webhook.disabled",
          detail: { reason: "a's own trouble" },
        });
        const [note] = await harness.hooklane.database.db
          .select({ id: webhookNotification.id })
          .from(webhookNotification)
          .where(eq(webhookNotification.webhookId, webhookId));
        return `ntf_${note!.id}`;
      };
      const resend = await harness.call("POST", "/v3/webhook-resends", {
        ...A,
        body: { eventType: "webhook.test", since: "2020-01-01T00:00:00Z" },
      });
      const session = await harness.call("POST", "/v3/listen-sessions", {
        ...A,
        body: { forwardTo: "http://localhost:4000/only-a-listens-here" },
      });
      const portal = await harness.call("POST", "/v3/portal-sessions", {
        ...A,
        body: { frameAncestors: ["https://a.example.com"] },
      });
      fixture = {
        webhookId: created.body.id,
        dispatchId: test.body.id,
        eventId: test.body.event.id,
        recoveryId: recovery.body.id,
        resendId: resend.body.id,
        notificationId: await aNotification(created.body.id),
        sessionId: session.body.id,
        portalSessionId: portal.body.id,
        receiverUrl: receiver.url,
        secrets: [created.body.id, test.body.id, test.body.event.id, recovery.body.id, created.body.secret],
        signingSecrets: [created.body.secret, session.body.secret],
      };
      fixture.secrets.push(resend.body.id, fixture.notificationId, "a's own trouble");
      fixture.secrets.push("only-a-knows-this-path", "a's private note", session.body.id, session.body.secret);
      fixture.secrets.push("only-a-listens-here", portal.body.id, "https://a.example.com");
    }, HARNESS_START_MS);
    afterAll(async () => {
      await harness?.close();
      await receiver?.close();
    });

    it.each(OTHERS)("answers $name with 404 and nothing of A's on every object route", async (other) => {
      for (const route of controlPlaneRoutes) {
        const probe = PROBES[route]!;
        const response = await callProbe(route, other);
        const text = JSON.stringify(response.body ?? "");
        if (probe.kind === "object") expect(response.status, route).toBe(404);
        else expect(response.status, `${route}: ${text}`).toBeLessThan(300);
        for (const secret of fixture.secrets) expect(text, `${route} leaks ${secret}`).not.toContain(secret);
      }
      // A cursor is an object too.
      const paged = await harness.call("GET", `/v3/webhooks?cursor=${fixture.webhookId}`, other);
      expect(paged.status).toBe(422);
      expect(JSON.stringify(paged.body)).not.toContain("only-a-knows-this-path");
    });

    it("lets a support token of account B read, retry and recover A's deliveries, never a secret, and audits it", async () => {
      for (const route of controlPlaneRoutes) {
        const probe = PROBES[route]!;
        const response = await callProbe(route, SUPPORT);
        const text = JSON.stringify(response.body ?? "");
        for (const secret of fixture.signingSecrets) expect(text, `${route} shows a secret`).not.toContain(secret);
        if (probe.support) {
          expect(response.status, `${route}: ${text}`).toBeLessThan(300);
          if (route === "POST /v3/webhook-dispatches/:id/retry") {
            // Delivered again before A's own retry below, which a pending dispatch would refuse.
            await eventually(
              () => harness.call("GET", `/v3/webhook-dispatches/${fixture.dispatchId}`, A),
              (answer) => answer.body.status === "success",
            );
          }
        } else if (probe.kind === "object") {
          expect(response.status, route).toBe(404);
          for (const secret of fixture.secrets) expect(text, `${route} leaks ${secret}`).not.toContain(secret);
        } else {
          expect(response.status, `${route}: ${text}`).toBeLessThan(300);
        }
      }
      // Support's search by event id finds A's delivery; an ordinary admin's finds nothing (above).
      const found = await harness.call("GET", `/v3/webhook-dispatches?eventId=${fixture.eventId}`, SUPPORT);
      expect(found.body.data.map((d: { id: string }) => d.id)).toEqual([fixture.dispatchId]);
      // A reads in its own audit log everything support did to its objects, and who did it.
      const audit = await harness.call("GET", "/v3/audit-log?limit=100", A);
      const bySupport = audit.body.data.filter((entry: { actor: { role: string } }) => entry.actor.role === "support");
      const expected = Object.values(PROBES).flatMap((probe) => (probe.support ? [probe.support] : []));
      expect(new Set(bySupport.map((entry: { action: string }) => entry.action))).toEqual(new Set(expected));
      for (const entry of bySupport) {
        expect(entry).toMatchObject({
          account: A.account,
          actor: { sub: SUPPORT.sub, account: SUPPORT.account, role: "support" },
        });
      }
    });

    it("leaves A's objects untouched, and A reaches every one of them", async () => {
      const own = await harness.call("GET", `/v3/webhooks/${fixture.webhookId}`, A);
      expect(own.body).toMatchObject({ description: "a's private note", status: "active" });
      expect(own.body.previousSecretExpires).toBeNull();
      // Asking for consent needs a webhook waiting for it.
      await harness.hooklane.database.db
        .update(webhook)
        .set({ consentState: "pending", consentRequestedAt: new Date() })
        .where(eq(webhook.id, fixture.webhookId));
      // The owner's own calls succeed, so the 404s above were scoping, not typos; DELETE goes last.
      const ordered = [...controlPlaneRoutes].sort(
        (x, y) => Number(x.startsWith("DELETE")) - Number(y.startsWith("DELETE")),
      );
      for (const route of ordered) {
        const response = await callProbe(route, A);
        expect(response.status, `${route}: ${JSON.stringify(response.body)}`).toBeLessThan(300);
      }
    });
  });
});
