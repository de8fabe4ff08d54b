import { z } from "zod";
import { recordAudit } from "../../../lib/audit/audit-log.ts";
import type { OperationRouter } from "../../../lib/api/operation.ts";
import { ApiError } from "../../../lib/api/problem.ts";
import { eq, isNull } from "drizzle-orm";
import { listOf, listPage, pageQuery, readNewestFirst } from "../../../lib/api/list-page.ts";
import { iso, isoOrNull, timestamp } from "../../../lib/api/timestamps.ts";
import { webhookSigningKey, type WebhookSigningKey } from "../../../lib/db/schema.ts";
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
        "For a leaked key: the new key signs at once and the others leave the key set now (unless `grace` is given), so what they signed stops verifying. Receivers holding a cached set refuse deliveries until they fetch it again (at most its max-age); those deliveries are retried.",
      ),
    grace: z
      .number()
      .int()
      .min(0)
      .max(7 * 86_400)
      .optional()
      .describe(
        `Seconds (0 to 7 days) the keys it replaces stay in the key set after the new key starts signing, so what they signed still verifies; ${KEY_OVERLAP_S} unless given (0 with \`immediate\`).`,
      ),
  })
  .meta({ examples: [{ scope: "account" }, { scope: "account", grace: 7200 }, { immediate: true }] });

const scopeQuery = z.strictObject({
  scope: z
    .enum(["account", "global"])
    .default("account")
    .describe("`global`: the keys global webhooks sign with; admins only."),
  ...pageQuery,
});

const signingKeySchema = z
  .strictObject({
    id: z.string().describe("The key's id (`whk_…`): its `kid` in the key set and in `webhook-key-id`."),
    object: z.literal("webhook-signing-key"),
    account: z.string().nullable().describe("The account whose webhooks it signs for; null for global webhooks."),
    signsFrom: timestamp.describe(
      `When it starts signing: ${JWKS_MAX_AGE_S} s after its creation, the key set's cache lifetime, so receivers have it first (an account's first key: at once).`,
    ),
    publishedUntil: timestamp
      .nullable()
      .describe(
        "When it leaves the key set (a rotation replaced it; what it signed stops verifying then); null while it is the newest.",
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
        publishedUntil: null,
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
      description: `Makes a new ed25519 key for the account's webhooks that sign \`v1a\` (\`asymmetricSignature\`). It is in the account's key set (\`GET /webhook-keys/<account>/jwks.json\`) at once and signs from ${JWKS_MAX_AGE_S} s later (an account's first key: at once), so a receiver that caches the set as told has it before any delivery needs it; the keys it replaces stay in the set \`grace\` seconds after that (${KEY_OVERLAP_S} unless given), then leave it (a signature by them no longer verifies; \`GET /v3/webhook-signing-keys\` says when). Audited, with the grace.`,
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
        const rotated = await rotateSigningKey(tx, account, secrets, {
          immediate: body.immediate,
          ...(body.grace === undefined ? {} : { graceSeconds: body.grace }),
        });
        await recordAudit(tx, principal, {
          action: "webhook-signing-key.rotated",
          target: rotated.kid,
          account,
          detail: {
            signsFrom: iso(rotated.signsFrom),
            immediate: body.immediate,
            graceSeconds: Math.round((rotated.previousUntil.getTime() - rotated.signsFrom.getTime()) / 1_000),
            previousKeysUntil: iso(rotated.previousUntil),
          },
        });
        return rotated;
      });
      return c.json(
        {
          id: key.kid,
          object: "webhook-signing-key",
          account,
          signsFrom: iso(key.signsFrom),
          publishedUntil: null,
          created: iso(key.createdAt),
        },
        201,
      );
    },
  );

  router.add(
    {
      method: "get",
      path: "/v3/webhook-signing-keys",
      operationId: "listWebhookSigningKeys",
      summary: "List the ed25519 signing keys",
      description:
        "The account's keys, newest first: when each signs from and until when it stays in the key set, so a rotation's state is plain. Never a private key.",
      tag: "Webhooks",
      query: scopeQuery,
      responses: {
        200: { description: "A page of keys.", schema: listOf(signingKeySchema) },
        403: { description: "Only admins read the global webhooks' keys." },
      },
    },
    async (c, { query }) => {
      if (query.scope === "global" && !c.get("principal").admin) {
        throw new ApiError(403, "Forbidden", "Only admins can read the global webhooks' signing keys.");
      }
      const account = query.scope === "global" ? null : await owningAccount(c, undefined);
      const rows = await readNewestFirst(c.get("database").db, webhookSigningKey, {
        scope: account === null ? isNull(webhookSigningKey.account) : eq(webhookSigningKey.account, account),
        limit: query.limit,
        cursor: query.cursor,
      });
      return c.json(listPage(rows, query.limit, presentSigningKey));
    },
  );
}

function presentSigningKey(row: WebhookSigningKey): z.output<typeof signingKeySchema> {
  return {
    id: row.id,
    object: "webhook-signing-key",
    account: row.account,
    signsFrom: iso(row.signsFrom),
    publishedUntil: isoOrNull(row.publishedUntil),
    created: iso(row.createdAt),
  };
}
