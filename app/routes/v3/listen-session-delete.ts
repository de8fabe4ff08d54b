import { and, eq } from "drizzle-orm";
import type { OperationRouter } from "../../../lib/api/operation.ts";
import { notFound } from "../../../lib/api/problem.ts";
import { webhook } from "../../../lib/db/schema.ts";
import { webhookInScope } from "../../../lib/webhook/webhook-scope.ts";
import { listenSessionIdParams } from "./listen-session-schemas.ts";
import { deleted, deletedSchema } from "./resource-fields.ts";

/** `DELETE /v3/listen-sessions/:id`: the CLI's exit. The webhook goes, with its deliveries. */
export function addListenSessionDelete(router: OperationRouter): void {
  router.add(
    {
      method: "delete",
      path: "/v3/listen-sessions/:id",
      operationId: "deleteListenSession",
      summary: "End a listen session",
      description: "Deletes the session's ephemeral webhook, its delivery log and anything not yet delivered.",
      tag: "Listen sessions",
      params: listenSessionIdParams,
      responses: {
        200: {
          description: "Ended.",
          schema: deletedSchema("listen-session", "DeletedListenSession", "wh_3e8a1f0c9b2d4e7f8a6c5b4d3e2f1a0b"),
        },
      },
    },
    async (c, { params }) => {
      const { subscriptions } = c.get("hooklane");
      const rows = await c
        .get("database")
        .db.delete(webhook)
        .where(and(webhookInScope(c.get("principal"), params.id), eq(webhook.status, "listening")))
        .returning({ id: webhook.id });
      if (rows.length === 0) throw notFound("listen session");
      subscriptions.invalidate();
      return c.json(deleted("listen-session", rows[0]!.id));
    },
  );
}
