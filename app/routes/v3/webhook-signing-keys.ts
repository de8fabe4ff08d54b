import { z } from "zod";
import { recordAudit } from "../../../lib/audit/audit-log.ts";
import type { OperationRouter } from "../../../lib/api/operation.ts";
import { ApiError } from "../../../lib/api/problem.ts";
import { iso, timestamp } from "../../../lib/api/timestamps.ts";
import { JWKS_MAX_AGE_S, KEY_OVERLAP_S, rotateSigningKey } from "../../../lib/webhook/outbound/webhook-signing-keys.ts";
import { owningAccount } from "./tenancy.ts";

const rotateBody = z
  .strictObject({
    scope: z
      .enum(["account", "global"])
      .default("account")
      .describe("`global`: the keys global webhooks sign with; admins only."),
    immediate: z
      .boolean()
      .default(false)
      .describe(
        "For a leaked key: the new key signs at once and the others leave the key set now, so what they signed stops verifying. Receivers holding a cached set refuse deliveries until they fetch it again (at most its max-age); those deliveries are retried.",
      ),
  })
  .meta({ examples: [{ scope: "account" }] });

const signingKeySchema = z
  .strictObject({
    id: z.string().describe("The key's id (`whk_…`): its `kid` in the key set and in `webhook-key-id`."),
    object: z.literal("webhook-signing-key"),
    account: z.string().nullable().describe("The account whose webhooks it signs for; null for global webhooks."),
    signsFrom: timestamp.describe(
      `When it starts signing: ${JWKS_MAX_AGE_S} s after its creation, the key set's cache lifetime, so receivers have it first (an account's first key: at once).`,
    ),
    created: timestamp,
  })
  .meta({
    id: "WebhookSigningKey",
    examples: [
      {
        id: "whk_7c1f0e9d2b8a4c6e8f0a1b2c3d4e5f6a",
        object: "webhook-signing-key",
        account: "acc_4b1f9e2c7d8a4e6f9b0c1d2e3f4a5b6c",
        signsFrom: "2026-12-01T09:35:00.000Z",
        created: "2026-12-01T09:30:00.000Z",
      },
    ],
  });

/** `POST /v3/webhook-signing-keys/rotate`: a new ed25519 key for an account's `v1a` signatures. */
export function addWebhookSigningKeys(router: OperationRouter): void {
  router.add(
    {
      method: "post",
      path: "/v3/webhook-signing-keys/rotate",
      operationId: "rotateWebhookSigningKey",
      summary: "Rotate the ed25519 signing key",
      description: `Makes a new ed25519 key for the account's webhooks that sign \`v1a\` (\`asymmetricSignature\`). It is in the account's key set (\`GET /webhook-keys/<account>/jwks.json\`) at once and signs from ${JWKS_MAX_AGE_S} s later (an account's first key: at once), so a receiver that caches the set as told has it before any delivery needs it; the key it replaces stays in the set ${KEY_OVERLAP_S} s after that, then leaves it (a signature by it no longer verifies). Audited.`,
      tag: "Webhooks",
      body: rotateBody,
      bodyOptional: true,
      responses: {
        201: { description: "The new key.", schema: signingKeySchema },
        403: { description: "Only admins rotate the global webhooks' key." },
      },
    },
    async (c, { body }) => {
      const { secrets } = c.get("hooklane");
      const database = c.get("database");
      const principal = c.get("principal");
      if (body.scope === "global" && !principal.admin) {
        throw new ApiError(403, "Forbidden", "Only admins can rotate the global webhooks' signing key.");
      }
      const account = body.scope === "global" ? null : await owningAccount(c, undefined);
      const key = await database.transaction(async (tx) => {
        const rotated = await rotateSigningKey(tx, account, secrets, { immediate: body.immediate });
        await recordAudit(tx, principal, {
          action: "webhook-signing-key.rotated",
          target: rotated.kid,
          account,
          detail: { signsFrom: iso(rotated.signsFrom), immediate: body.immediate },
        });
        return rotated;
      });
      return c.json(
        {
          id: key.kid,
          object: "webhook-signing-key",
          account,
          signsFrom: iso(key.signsFrom),
          created: iso(key.createdAt),
        },
        201,
      );
    },
  );
}
