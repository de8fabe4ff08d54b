import { recordAudit } from "../../../lib/audit/audit-log.ts";
import { sql } from "drizzle-orm";
import { afterCommit } from "../../../lib/api/handler.ts";
import type { OperationRouter } from "../../../lib/api/operation.ts";
import { ApiError, notFound } from "../../../lib/api/problem.ts";
import { webhook } from "../../../lib/db/schema.ts";
import { assertSubscribableEvents } from "../../../lib/webhook/catalogue/subscribable-events.ts";
import { releaseOrdering } from "../../../lib/db/sql/ordering-holds.ts";
import { skipHeldDispatches } from "../../../lib/db/sql/skip-dispatches.ts";
import { findWebhook, webhookInScope } from "../../../lib/webhook/webhook-scope.ts";
import { sealHeaders } from "../../../lib/webhook/outbound/webhook-custom-headers.ts";
import { ensureSigningKey } from "../../../lib/webhook/outbound/webhook-signing-keys.ts";
import { consentForUrl } from "../../../lib/db/sql/endpoint-consent.ts";
import { wakeSweepers } from "../../../lib/webhook/sweeper/wake-sweepers.ts";
import {
  assertAsymmetricScheme,
  assertCallbackUrl,
  assertCustomHeaders,
  assertSecretsFollowUrl,
  auditedBody,
  compileFilter,
  presentWebhook,
  updateWebhookBody,
  webhookIdParams,
  webhookSchema,
} from "./webhook-schemas.ts";

/**
 * `PATCH /v3/webhooks/:id`: url, events, description, scheme, rate limit,
 * held-event age limit, and status `active`/`paused`. Events that arrive
 * while paused or disabled are kept; making the webhook active again skips
 * those held longer than its `heldEventMaxAge` (when set) and wakes the lane
 * so the rest goes out now. A new URL asks its endpoint's consent again when
 * the account requires it (until it consents, nothing is sent to it).
 * A listen session's webhook keeps its status: the lane must never send it.
 */
export function addWebhookUpdate(router: OperationRouter): void {
  router.add(
    {
      method: "patch",
      path: "/v3/webhooks/:id",
      operationId: "updateWebhook",
      summary: "Update, pause, resume or re-enable a webhook",
      tag: "Webhooks",
      params: webhookIdParams,
      body: updateWebhookBody,
      responses: {
        200: { description: "The updated webhook.", schema: webhookSchema },
        409: { description: "A listen session's webhook cannot change its status." },
        422: {
          description:
            "Invalid input, an unsafe URL, a header a webhook cannot set, a filter that does not parse (naming the position) or names an attribute an event type does not declare (checked against the new events too), or an event type this webhook's scope never hears (an account webhook cannot subscribe to events no account owns, `ownerKind: none`).",
        },
      },
    },
    async (c, { params, body }) => {
      const { config, secrets, subscriptions, transport } = c.get("hooklane");
      const database = c.get("database");
      const principal = c.get("principal");
      const before = await findWebhook(database, principal, params.id);
      if (before.status === "listening" && body.status !== undefined) {
        throw new ApiError(
          409,
          "Conflict",
          "A listen session's webhook cannot be activated or paused; end the session.",
        );
      }
      if (body.url !== undefined) assertCallbackUrl(body.url, config.allowedHosts);
      if (body.headers !== undefined) assertCustomHeaders(body.headers, config.brand, before.headers);
      assertSecretsFollowUrl(before, body);
      const asymmetric = body.asymmetricSignature ?? before.asymmetricSignature;
      assertAsymmetricScheme(asymmetric, body.scheme ?? before.scheme);
      const headers = body.headers === undefined ? undefined : await sealHeaders(body.headers, secrets, before.headers);
      const audience = before.account === null ? "global" : "account";
      const events =
        body.events === undefined ? undefined : await assertSubscribableEvents(database, body.events, audience);
      // New events are held to the filter kept, a new filter to the events kept.
      const filter =
        body.filter === undefined && events === undefined
          ? undefined
          : compileFilter(body.filter === undefined ? before.filter : body.filter, events ?? before.events, audience);
      const statusChanges = body.status !== undefined && body.status !== before.status;
      const { row, skipped } = await database.transaction(async (tx) => {
        if (body.asymmetricSignature && !before.asymmetricSignature) {
          await ensureSigningKey(tx, before.account, secrets);
        }
        // A new endpoint is asked for its consent again, when its account requires it.
        const newUrl = body.url !== undefined && body.url !== before.url ? body.url : undefined;
        const consent =
          newUrl === undefined || before.status === "listening"
            ? {}
            : await consentForUrl(tx, {
                account: before.account,
                url: newUrl,
                newAccounts: config.consent.newAccounts,
                exceptWebhook: before.id,
              });
        const [updated] = await tx.db
          .update(webhook)
          .set({
            // A new endpoint starts with a closed breaker: the old one's failures say nothing about it.
            ...(newUrl === undefined
              ? {}
              : { url: newUrl, breakerFailures: 0, breakerOpens: 0, breakerOpenUntil: null }),
            ...consent,
            ...(body.rateLimit === undefined
              ? {}
              : { rateLimit: body.rateLimit, rateTokens: null, rateRefilledAt: null }),
            ...(events === undefined ? {} : { events }),
            ...(body.description === undefined ? {} : { description: body.description }),
            ...(headers === undefined ? {} : { headers }),
            ...(body.filter === undefined ? {} : filter),
            ...(body.scheme === undefined ? {} : { scheme: body.scheme }),
            ...(body.asymmetricSignature === undefined ? {} : { asymmetricSignature: body.asymmetricSignature }),
            ...(body.heldEventMaxAge === undefined ? {} : { heldEventMaxAge: body.heldEventMaxAge }),
            ...(body.ordering === undefined ? {} : { ordering: body.ordering }),
            ...(body.orderingHoldMax === undefined ? {} : { orderingHoldMax: body.orderingHoldMax }),
            ...(statusChanges ? { status: body.status, statusChangedAt: sql`now()`, disabledReason: null } : {}),
            updatedAt: sql`now()`,
          })
          .where(webhookInScope(principal, params.id))
          .returning();
        if (!updated) throw notFound("webhook");
        // No longer ordered: nothing of its waits for an earlier event any more.
        if (body.ordering === "none" && before.ordering !== "none") await releaseOrdering(tx, updated.id);
        // Made active again: what it held longer than its age limit is skipped, the rest goes out.
        const maxAge = updated.heldEventMaxAge;
        const held =
          statusChanges && updated.status === "active" && maxAge !== null
            ? await skipHeldDispatches(tx, {
                webhookId: updated.id,
                reason: `held longer than ${maxAge} s while ${before.status}`,
                olderThanSeconds: maxAge,
              })
            : 0;
        // What changed, never a secret: the fields sent, with their new values.
        await recordAudit(tx, principal, {
          action: "webhook.updated",
          target: updated.id,
          account: updated.account,
          detail: held > 0 ? { ...auditedBody(body), skipped: held } : auditedBody(body),
        });
        return { row: updated, skipped: held };
      });
      if (skipped > 0) c.get("log").info({ webhookId: row.id, skipped }, "held events past the age limit skipped");
      if (events !== undefined) afterCommit(c, () => subscriptions.invalidate());
      if (row.consentState === "pending" && row.url !== before.url) afterCommit(c, () => wakeSweepers(database));
      // Its kept events, or those its ordering held back, are due: deliver them now rather than at the lane's next
      // idle check.
      const released = body.ordering === "none" && before.ordering !== "none";
      if ((statusChanges && row.status === "active") || released) afterCommit(c, () => transport.sendDeliver([]));
      return c.json(presentWebhook(row));
    },
  );
}
