import { recordAudit } from "../../../lib/audit/audit-log.ts";
import { afterCommit } from "../../../lib/api/handler.ts";
import type { OperationRouter } from "../../../lib/api/operation.ts";
import { ApiError, QuotaExceededError } from "../../../lib/api/problem.ts";
import { CONSENT_MIN_INTERVAL_S, takeConsentRequest } from "../../../lib/db/sql/endpoint-consent.ts";
import { askConsent, CONSENT_LEASE_MS, withConsentDeps } from "../../../lib/webhook/outbound/endpoint-consent.ts";
import { findWebhook } from "../../../lib/webhook/webhook-scope.ts";
import { presentWebhook, webhookIdParams, webhookSchema } from "./webhook-schemas.ts";

/**
 * `POST /v3/webhooks/:id/request-consent`: sends the endpoint-consent request now, while the endpoint's consent is
 * pending, and answers with the webhook as the answer left it (`consent.state` `granted`, or `lastError` saying
 * why not). It counts as one of the schedule's requests. At most one request per CONSENT_MIN_INTERVAL_S to a webhook's
 * endpoint, however asked for. Audited.
 */
export function addWebhookRequestConsent(router: OperationRouter): void {
  router.add(
    {
      method: "post",
      path: "/v3/webhooks/:id/request-consent",
      operationId: "requestWebhookConsent",
      summary: "Ask the endpoint for its consent now",
      description: `While \`consent.state\` is \`pending\`: sends the consent request (\`OPTIONS\` with \`WebHook-Request-Origin\`) at once and answers with what the endpoint's answer made of the webhook. Once it consents, the events it held are delivered. One request per ${CONSENT_MIN_INTERVAL_S} s at most.`,
      tag: "Webhooks",
      params: webhookIdParams,
      responses: {
        200: { description: "The webhook after the endpoint's answer.", schema: webhookSchema },
        409: { description: "Its consent is not pending: granted already, or not asked of this webhook." },
        429: { description: "A consent request went to it moments ago; `Retry-After` says when to ask again." },
      },
    },
    async (c, { params }) => {
      const { config, secrets, transport } = c.get("hooklane");
      const database = c.get("database");
      const principal = c.get("principal");
      const hook = await findWebhook(database, principal, params.id);
      const taken = await takeConsentRequest(database, { webhookId: hook.id, leaseMs: CONSENT_LEASE_MS });
      if (taken === undefined) {
        const detail =
          hook.consentState === "granted"
            ? "The endpoint has consented already."
            : "This webhook's account does not ask its endpoints for consent.";
        throw new ApiError(409, "Conflict", detail);
      }
      if ("retryInSeconds" in taken) {
        throw new QuotaExceededError(
          "consent-requests",
          1,
          `A consent request went to this endpoint less than ${CONSENT_MIN_INTERVAL_S} s ago.`,
          taken.retryInSeconds,
        );
      }
      const { state } = await withConsentDeps({ database, secrets, config }, (deps) => askConsent(deps, taken));
      await recordAudit(database, principal, {
        action: "webhook.consent-requested",
        target: hook.id,
        account: hook.account,
        detail: { granted: state === "granted" },
      });
      if (state === "granted") afterCommit(c, () => transport.sendDeliver([]));
      return c.json(presentWebhook(await findWebhook(database, principal, hook.id)));
    },
  );
}
