import { recordAudit } from "../../../lib/audit/audit-log.ts";
import { z } from "zod";
import type { OperationRouter } from "../../../lib/api/operation.ts";
import { notFound } from "../../../lib/api/problem.ts";
import { revokeAllPortalSessions, revokePortalSession } from "../../../lib/webhook/portal/portal-session-store.ts";
import { accountField, portalSessionAccount } from "./portal-session-schemas.ts";
import { deleted, deletedSchema, idParams } from "./resource-fields.ts";

const revocationSchema = z
  .strictObject({
    object: z.literal("portal-session-revocation"),
    account: z.string().describe("The account whose sessions were ended (`acc_…`)."),
    revoked: z.number().int().describe("How many live sessions were ended."),
  })
  .meta({
    id: "PortalSessionRevocation",
    examples: [{ object: "portal-session-revocation", account: "acc_4b1f9e2c7d8a4e6f9b0c1d2e3f4a5b6c", revoked: 3 }],
  });

/**
 * `DELETE /v3/portal-sessions/:id` and `POST /v3/portal-sessions/revoke-all`:
 * ending portal sessions before they expire. The portal checks its session's
 * row on every request, so the next page of a revoked session answers 401.
 */
export function addPortalSessionRevoke(router: OperationRouter): void {
  router.add(
    {
      method: "delete",
      path: "/v3/portal-sessions/:id",
      operationId: "revokePortalSession",
      summary: "Revoke a portal session",
      description:
        "Ends the session now: its URL's pages answer 401 from the next request on. Revoking a revoked session answers the same; an expired one is gone (404).",
      tag: "Portal",
      params: idParams("The session's id (`ps_…`)."),
      query: z.strictObject({ account: accountField }),
      responses: {
        200: {
          description: "Revoked.",
          schema: deletedSchema("portal-session", "RevokedPortalSession", "ps_5c1e0f9a8b7d4c3e2f1a0b9c8d7e6f5a"),
        },
      },
    },
    async (c, { params, query }) => {
      const database = c.get("database");
      const account = portalSessionAccount(c, query.account);
      const id = await database.transaction(async (tx) => {
        const revoked = await revokePortalSession(tx, account, params.id);
        if (revoked)
          await recordAudit(tx, c.get("principal"), { action: "portal-session.revoked", target: revoked, account });
        return revoked;
      });
      if (!id) throw notFound("portal session");
      return c.json(deleted("portal-session", id));
    },
  );

  router.add(
    {
      method: "post",
      path: "/v3/portal-sessions/revoke-all",
      operationId: "revokeAllPortalSessions",
      summary: "Revoke every portal session of an account",
      description:
        "Ends every live portal session of the caller's account (an admin may name another) at once, e.g. when a URL may have leaked.",
      tag: "Portal",
      body: z
        .strictObject({ account: accountField })
        .meta({ examples: [{ account: "acc_4b1f9e2c7d8a4e6f9b0c1d2e3f4a5b6c" }] }),
      bodyOptional: true,
      responses: { 200: { description: "How many sessions were ended.", schema: revocationSchema } },
    },
    async (c, { body }) => {
      const account = portalSessionAccount(c, body.account);
      const revoked = await c.get("database").transaction(async (tx) => {
        const ended = await revokeAllPortalSessions(tx, account);
        await recordAudit(tx, c.get("principal"), {
          action: "portal-sessions.revoked",
          target: account,
          account,
          detail: { revoked: ended },
        });
        return ended;
      });
      return c.json({ object: "portal-session-revocation" as const, account, revoked });
    },
  );
}
