import { recordAudit } from "../../../lib/audit/audit-log.ts";
import { sql } from "drizzle-orm";
import { z } from "zod";
import type { OperationRouter } from "../../../lib/api/operation.ts";
import { notFound } from "../../../lib/api/problem.ts";
import { webhook } from "../../../lib/db/schema.ts";
import { generateWebhookSecret } from "../../../lib/webhook/outbound/webhook-signature.ts";
import { webhookInScope } from "../../../lib/webhook/webhook-scope.ts";
import { presentWebhook, webhookIdParams, webhookSchema, webhookWithSecretSchema } from "./webhook-schemas.ts";

/** How long the previous secret keeps signing, as the second `v1`, after a rotation that names no grace. */
export const ROTATION_OVERLAP_MS = 24 * 60 * 60 * 1_000;
/** The longest grace a rotation may give the previous secret. */
const MAX_GRACE_SECONDS = 7 * 86_400;

const rotateBody = z
  .strictObject({
    grace: z
      .number()
      .int()
      .min(0)
      .max(MAX_GRACE_SECONDS)
      .default(ROTATION_OVERLAP_MS / 1_000)
      .describe(
        "Seconds (0 to 7 days; 86400 unless given) the replaced secret keeps signing beside the new one, so receivers can switch over. 0: it stops at once (a leaked secret): the next attempt carries only the new signature.",
      ),
  })
  .meta({ examples: [{ grace: 7_200 }] });

/**
 * `POST /v3/webhooks/:id/rotate-secret`: a new secret, shown once. The one it
 * replaces keeps signing for the grace asked for (24 h unless given; 0: not
 * at all); a rotation during another's overlap drops the oldest, so at most
 * two secrets ever sign. `POST /v3/webhooks/:id/expire-previous-secret` ends
 * an overlap now. Both are audited, with the grace.
 */
export function addWebhookRotateSecret(router: OperationRouter): void {
  router.add(
    {
      method: "post",
      path: "/v3/webhooks/:id/rotate-secret",
      operationId: "rotateWebhookSecret",
      summary: "Rotate the signing secret",
      description:
        "Issues a new secret (in this answer only). For `grace` seconds (24 h unless given) deliveries carry two `v1` signatures, the new secret's first; `previousSecretExpires` says until when. With `grace: 0` the old secret stops signing at once.",
      tag: "Webhooks",
      params: webhookIdParams,
      body: rotateBody,
      bodyOptional: true,
      responses: { 200: { description: "The webhook with its new secret.", schema: webhookWithSecretSchema } },
      answerHoldsSecret: true,
    },
    async (c, { params, body }) => {
      const { secrets } = c.get("hooklane");
      const database = c.get("database");
      const secret = generateWebhookSecret();
      const sealed = await secrets.seal(secret);
      const [row] = await database.db
        .update(webhook)
        .set({
          ...(body.grace === 0
            ? { previousSecretSealed: null, previousSecretExpiresAt: null }
            : {
                previousSecretSealed: sql`${webhook.secretSealed}`,
                previousSecretExpiresAt: sql`now() + ${body.grace} * interval '1 second'`,
              }),
          secretSealed: sealed,
          updatedAt: sql`now()`,
        })
        .where(webhookInScope(c.get("principal"), params.id))
        .returning();
      if (!row) throw notFound("webhook");
      await recordAudit(database, c.get("principal"), {
        action: "webhook.secret-rotated",
        target: row.id,
        account: row.account,
        detail: { graceSeconds: body.grace },
      });
      return c.json({ ...presentWebhook(row), secret });
    },
  );

  router.add(
    {
      method: "post",
      path: "/v3/webhooks/:id/expire-previous-secret",
      operationId: "expireWebhookPreviousSecret",
      summary: "Stop the previous secret signing now",
      description:
        "Ends a rotation's overlap at once (a leaked secret): from the next attempt deliveries carry only the current secret's signature. Without an overlap it changes nothing. Audited.",
      tag: "Webhooks",
      params: webhookIdParams,
      responses: { 200: { description: "The webhook, `previousSecretExpires` null.", schema: webhookSchema } },
    },
    async (c, { params }) => {
      const database = c.get("database");
      const [row] = await database.db
        .update(webhook)
        .set({ previousSecretSealed: null, previousSecretExpiresAt: null, updatedAt: sql`now()` })
        .where(webhookInScope(c.get("principal"), params.id))
        .returning();
      if (!row) throw notFound("webhook");
      await recordAudit(database, c.get("principal"), {
        action: "webhook.previous-secret-expired",
        target: row.id,
        account: row.account,
      });
      return c.json(presentWebhook(row));
    },
  );
}
