import { eq } from "drizzle-orm";
import { z } from "zod";
import { listOf, listPage, pageQuery, readNewestFirst } from "../../../lib/api/list-page.ts";
import type { OperationRouter } from "../../../lib/api/operation.ts";
import { portalSession } from "../../../lib/db/schema.ts";
import { livePortalSession } from "../../../lib/webhook/portal/portal-session-store.ts";
import {
  accountField,
  portalSessionAccount,
  portalSessionSchema,
  presentPortalSession,
} from "./portal-session-schemas.ts";

const listQuery = z.strictObject({ account: accountField, ...pageQuery });

/** `GET /v3/portal-sessions`: the account's live portal sessions, newest first. */
export function addPortalSessionList(router: OperationRouter): void {
  router.add(
    {
      method: "get",
      path: "/v3/portal-sessions",
      operationId: "listPortalSessions",
      summary: "List live portal sessions",
      description:
        "The caller's account's portal sessions that are neither revoked nor expired, newest first; never their URLs. Admins may name another account.",
      tag: "Portal",
      query: listQuery,
      responses: { 200: { description: "A page of portal sessions.", schema: listOf(portalSessionSchema) } },
    },
    async (c, { query }) => {
      const rows = await readNewestFirst(c.get("database").db, portalSession, {
        scope: eq(portalSession.account, portalSessionAccount(c, query.account)),
        filter: livePortalSession(),
        limit: query.limit,
        cursor: query.cursor,
      });
      return c.json(listPage(rows, query.limit, presentPortalSession));
    },
  );
}
