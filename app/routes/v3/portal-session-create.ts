import { recordAudit } from "../../../lib/audit/audit-log.ts";
import { z } from "zod";
import type { OperationRouter } from "../../../lib/api/operation.ts";
import { parseFrameAncestor } from "../../../lib/webhook/portal/frame-ancestor.ts";
import { sealPortalSession } from "../../../lib/webhook/portal/portal-session.ts";
import { storePortalSession } from "../../../lib/webhook/portal/portal-session-store.ts";
import { portalSessionWithUrlSchema } from "./portal-session-schemas.ts";
import { owningAccount } from "./tenancy.ts";

/** An origin allowed to frame the portal, as the CSP host-source it becomes (`parseFrameAncestor`). */
const frameOrigin = z
  .string()
  .max(300)
  .transform((text, ctx) => {
    const parsed = parseFrameAncestor(text);
    if ("source" in parsed) return parsed.source;
    ctx.addIssue({ code: "custom", message: parsed.problem });
    return z.NEVER;
  });

const createPortalSessionBody = z
  .strictObject({
    account: z.string().min(1).max(100).optional().describe("Admins only: the account to open; others get their own."),
    frameAncestors: z
      .array(frameOrigin)
      .min(1)
      .max(10)
      .describe(
        "Origins whose pages may embed the portal in a frame (the answer's `frame-ancestors`): `https://host[:port]` (`http://` for localhost and 127.0.0.1 only), nothing after it; `https://*.example.com` allows every subdomain of example.com.",
      ),
    expiresIn: z
      .number()
      .int()
      .min(10)
      .max(3_600)
      .default(900)
      .describe("Seconds until the session ends (sooner if it is revoked): its pages then answer 401."),
  })
  .meta({ examples: [{ frameAncestors: ["https://app.example.com"], expiresIn: 900 }] });

/**
 * `POST /v3/portal-sessions`: a short-lived URL that opens the console scoped
 * to one account, embeddable in a frame by the origins the session names:
 * how a SaaS shows its own customers their webhooks. The URL carries the
 * sealed session (`portal-session.ts`); its row (`portal-session-store.ts`)
 * is what the portal checks on every request, so it can be revoked.
 */
export function addPortalSessionCreate(router: OperationRouter): void {
  router.add(
    {
      method: "post",
      path: "/v3/portal-sessions",
      operationId: "createPortalSession",
      summary: "Open a webhooks portal for an account",
      description:
        "Answers a URL that opens the console for one account — its webhooks, delivery log, retries and recoveries, and nothing else — until `expires`, embeddable in a frame by `frameAncestors` only.",
      tag: "Portal",
      body: createPortalSessionBody,
      answerHoldsSecret: true,
      responses: { 201: { description: "The session and its URL.", schema: portalSessionWithUrlSchema } },
    },
    async (c, { body }) => {
      const account = await owningAccount(c, body.account);
      const { token, session } = await sealPortalSession(c.get("hooklane").config.secretKey, {
        account,
        frameAncestors: [...new Set(body.frameAncestors)],
        ttlSeconds: body.expiresIn,
      });
      await c.get("database").transaction(async (tx) => {
        await storePortalSession(tx, session);
        await recordAudit(tx, c.get("principal"), {
          action: "portal-session.created",
          target: session.id,
          account,
          detail: { frameAncestors: session.frameAncestors, expires: session.expiresAt.toISOString() },
        });
      });
      const answer: z.output<typeof portalSessionWithUrlSchema> = {
        id: session.id,
        object: "portal-session",
        account,
        url: `${new URL(c.req.url).origin}/console/portal/${token}`,
        frameAncestors: session.frameAncestors,
        expires: session.expiresAt.toISOString(),
        created: session.createdAt.toISOString(),
      };
      return c.json(answer, 201);
    },
  );
}
