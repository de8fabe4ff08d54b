import { recordAudit } from "../../../lib/audit/audit-log.ts";
import { afterCommit } from "../../../lib/api/handler.ts";
import { ApiError } from "../../../lib/api/problem.ts";
import type { OperationRouter } from "../../../lib/api/operation.ts";
import { webhook } from "../../../lib/db/schema.ts";
import { assertSubscribableEvents } from "../../../lib/webhook/catalogue/subscribable-events.ts";
import { generateWebhookSecret } from "../../../lib/webhook/outbound/webhook-signature.ts";
import { owningAccount } from "./tenancy.ts";
import { accountQuotas } from "./account-quotas.ts";
import { sealHeaders } from "../../../lib/webhook/outbound/webhook-custom-headers.ts";
import { ensureSigningKey } from "../../../lib/webhook/outbound/webhook-signing-keys.ts";
import { consentForUrl } from "../../../lib/db/sql/endpoint-consent.ts";
import { wakeSweepers } from "../../../lib/webhook/sweeper/wake-sweepers.ts";
import {
  assertAsymmetricScheme,
  assertCallbackUrl,
  assertCustomHeaders,
  compileFilter,
  createWebhookBody,
  presentWebhook,
  webhookWithSecretSchema,
} from "./webhook-schemas.ts";

/**
 * `POST /v3/webhooks`: subscribe; the answer carries the secret, once. When its account requires endpoint consent,
 * nothing is sent to the URL until the endpoint consents (the request goes at once).
 */
export function addWebhookCreate(router: OperationRouter): void {
  router.add(
    {
      method: "post",
      path: "/v3/webhooks",
      operationId: "createWebhook",
      summary: "Create a webhook",
      description: "Registers an endpoint for the given event types. The signing secret is in this answer only.",
      tag: "Webhooks",
      body: createWebhookBody,
      responses: {
        429: { description: "The account has its quota of webhooks (`WEBHOOK_QUOTA_WEBHOOKS`); delete one first." },
        201: { description: "Created, with its secret.", schema: webhookWithSecretSchema },
        403: { description: "Only admins create global webhooks." },
        422: {
          description:
            "Invalid input, an unsafe URL, a header a webhook cannot set, a filter that does not parse (naming the position) or names an attribute an event type does not declare, an event type this webhook's scope never hears (an account webhook cannot subscribe to events no account owns, `ownerKind: none`), or a token whose account does not exist (`account`).",
        },
      },
      answerHoldsSecret: true,
    },
    async (c, { body }) => {
      const { config, secrets, subscriptions } = c.get("hooklane");
      const database = c.get("database");
      const principal = c.get("principal");
      if (body.scope === "global" && !principal.admin) {
        throw new ApiError(403, "Forbidden", "Only admins can create global webhooks.");
      }
      assertCallbackUrl(body.url, config.allowedHosts);
      assertCustomHeaders(body.headers, config.brand);
      assertAsymmetricScheme(body.asymmetricSignature, body.scheme);
      // An account webhook for an account that does not exist yet would hear its events once someone creates it.
      const owner = body.scope === "global" ? null : await owningAccount(c, undefined);
      const audience = owner === null ? "global" : "account";
      const events = await assertSubscribableEvents(database, body.events, audience);
      const filter = compileFilter(body.filter, events, audience);
      const secret = generateWebhookSecret();
      const secretSealed = await secrets.seal(secret);
      const headers = await sealHeaders(body.headers, secrets);
      const row = await accountQuotas.webhook(c, owner, async (tx) => {
        // Its account's key exists before the webhook that signs with it.
        if (body.asymmetricSignature) await ensureSigningKey(tx, owner, secrets);
        const consent = await consentForUrl(tx, {
          account: owner,
          url: body.url,
          newAccounts: config.consent.newAccounts,
        });
        const [created] = await tx.db
          .insert(webhook)
          .values({
            account: owner,
            url: body.url,
            events,
            scheme: body.scheme,
            description: body.description,
            headers,
            ...filter,
            asymmetricSignature: body.asymmetricSignature,
            rateLimit: body.rateLimit,
            heldEventMaxAge: body.heldEventMaxAge,
            ordering: body.ordering,
            orderingHoldMax: body.orderingHoldMax,
            secretSealed,
            ...consent,
            createdBy: principal.sub,
          })
          .returning();
        await recordAudit(tx, principal, {
          action: "webhook.created",
          target: created!.id,
          account: owner,
          detail: {
            url: body.url,
            events: created!.events,
            ...(filter.filter === null ? {} : { filter: filter.filter }),
          },
        });
        return created!;
      });
      afterCommit(c, () => subscriptions.invalidate());
      // Its endpoint's consent is asked for now, by whichever sweeper hears this first.
      if (row.consentState === "pending") afterCommit(c, () => wakeSweepers(database));
      // The secret is shown here, once; afterwards only its sealed form exists.
      return c.json({ ...presentWebhook(row), secret }, 201);
    },
  );
}
