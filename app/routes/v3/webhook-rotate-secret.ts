import { recordAudit } from "../../../lib/audit/audit-log.ts";
import { sql } from "drizzle-orm";
import type { OperationRouter } from "../../../lib/api/operation.ts";
import { notFound } from "../../../lib/api/problem.ts";
import { webhook } from "../../../lib/db/schema.ts";
import { generateWebhookSecret } from "../../../lib/webhook/outbound/webhook-signature.ts";
import { webhookInScope } from "../../../lib/webhook/webhook-scope.ts";
import { presentWebhook, webhookIdParams, webhookWithSecretSchema } from "./webhook-schemas.ts";

/** How long the previous secret keeps signing, as the second `v1`, after a rotation. */
export const ROTATION_OVERLAP_MS = 24 * 60 * 60 * 1_000;

/**
 * `POST /v3/webhooks/:id/rotate-secret`: a new secret, shown once. The one it
 * replaces keeps signing for 24 h; a rotation during another's overlap drops
 * the oldest, so at most two secrets ever sign.
 */
export function addWebhookRotateSecret(router: OperationRouter): void {
  router.add(
    {
      method: "post",
      path: "/v3/webhooks/:id/rotate-secret",
      operationId: "rotateWebhookSecret",
      summary: "Rotate the signing secret",
      description:
        "Issues a new secret (in this answer only). For 24 h deliveries carry two `v1` signatures, the new secret's first.",
      tag: "Webhooks",
      params: webhookIdParams,
      responses: { 200: { description: "The webhook with its new secret.", schema: webhookWithSecretSchema } },
      answerHoldsSecret: true,
    },
    async (c, { params }) => {
      const { secrets } = c.get("hooklane");
      const database = c.get("database");
      const secret = generateWebhookSecret();
      const sealed = await secrets.seal(secret);
      const [row] = await database.db
        .update(webhook)
        .set({
          previousSecretSealed: sql`${webhook.secretSealed}`,
          previousSecretExpiresAt: sql`now() + ${ROTATION_OVERLAP_MS} * interval '1 millisecond'`,
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
      });
      return c.json({ ...presentWebhook(row), secret });
    },
  );
}
