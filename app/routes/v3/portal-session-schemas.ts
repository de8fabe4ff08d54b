import { z } from "zod";
import { iso, timestamp } from "../../../lib/api/timestamps.ts";
import type { ApiContext } from "../../../lib/api/handler.ts";
import type { PortalSessionRow } from "../../../lib/db/schema.ts";

const EXAMPLE = {
  id: "ps_5c1e0f9a8b7d4c3e2f1a0b9c8d7e6f5a",
  object: "portal-session",
  account: "acc_4b1f9e2c7d8a4e6f9b0c1d2e3f4a5b6c",
  frameAncestors: ["https://app.example.com"],
  expires: "2026-12-01T09:45:00.000Z",
  created: "2026-12-01T09:30:00.000Z",
};

/** A portal session as listed: never its URL, which only its creator is shown. */
export const portalSessionSchema = z
  .strictObject({
    id: z.string().describe("`ps_…`"),
    object: z.literal("portal-session"),
    account: z.string().describe("The account the portal opens (`acc_…`)."),
    frameAncestors: z
      .array(z.string())
      .describe(
        "Origins whose pages may embed the portal in a frame, as written into its `frame-ancestors` (lower case, without a default port).",
      ),
    expires: timestamp.describe("When the session ends, unless revoked sooner: its pages then answer 401."),
    created: timestamp,
  })
  .meta({ id: "PortalSession", examples: [EXAMPLE] });

/** What creating one answers: the session and, this once, its URL. */
export const portalSessionWithUrlSchema = portalSessionSchema
  .extend({
    url: z
      .string()
      .describe(
        "Opens the console for this account only, until `expires` or until the session is revoked. A capability: hand it only to that account; it is shown this once.",
      ),
  })
  .meta({
    id: "PortalSessionWithUrl",
    examples: [
      { ...EXAMPLE, url: "https://hooklane.example.com/console/portal/eyJhbGciOiJIUzI1NiJ9.eyJhY2NvdW50Ijoi…" },
    ],
  });

export function presentPortalSession(row: PortalSessionRow): z.output<typeof portalSessionSchema> {
  return {
    id: row.id,
    object: "portal-session",
    account: row.account,
    frameAncestors: row.frameAncestors,
    expires: iso(row.expiresAt),
    created: iso(row.createdAt),
  };
}

/** `account`, as a query parameter or body field of the portal-session routes. */
export const accountField = z
  .string()
  .min(1)
  .max(100)
  .optional()
  .describe("Admins only: the account whose sessions these are; others always get their own.");

/** The account whose portal sessions a request reaches: an admin may name one, everyone else gets their own. */
export function portalSessionAccount(c: ApiContext, requested: string | undefined): string {
  const principal = c.get("principal");
  return principal.admin && requested ? requested : principal.account;
}
