import { z } from "zod";
import { listOf, listPage, pageQuery, readNewestFirst } from "../../../lib/api/list-page.ts";
import type { OperationRouter } from "../../../lib/api/operation.ts";
import { webhook } from "../../../lib/db/schema.ts";
import { recordAudit, recordListRead } from "../../../lib/audit/audit-log.ts";
import { findWebhook, webhookScope } from "../../../lib/webhook/webhook-scope.ts";
import { presentWebhook, webhookIdParams, webhookSchema } from "./webhook-schemas.ts";

/** `GET /v3/webhooks` (newest first, cursor pages) and `GET /v3/webhooks/:id`. */
export function addWebhookRead(router: OperationRouter): void {
  router.add(
    {
      method: "get",
      path: "/v3/webhooks",
      operationId: "listWebhooks",
      summary: "List webhooks",
      description:
        "The caller's account's webhooks, and the global ones for an admin (every account's for support, and each account whose webhooks support read sees a `webhook.read` for it); newest first.",
      tag: "Webhooks",
      query: z.strictObject(pageQuery),
      responses: { 200: { description: "A page of webhooks.", schema: listOf(webhookSchema) } },
    },
    async (c, { query }) => {
      const database = c.get("database");
      const principal = c.get("principal");
      const rows = await readNewestFirst(database.db, webhook, {
        scope: webhookScope(principal, { support: true }),
        ...query,
      });
      // Support listing other accounts' webhooks: on each one's record (a global webhook's under none).
      await recordListRead(
        database,
        principal,
        { action: "webhook.read", target: "webhooks" },
        rows.slice(0, query.limit).map((row) => row.account),
      );
      return c.json(listPage(rows, query.limit, presentWebhook));
    },
  );

  router.add(
    {
      method: "get",
      path: "/v3/webhooks/:id",
      operationId: "getWebhook",
      summary: "Get a webhook",
      tag: "Webhooks",
      params: webhookIdParams,
      responses: { 200: { description: "The webhook.", schema: webhookSchema } },
    },
    async (c, { params }) => {
      const database = c.get("database");
      const principal = c.get("principal");
      const row = await findWebhook(database, principal, params.id, { support: true });
      await recordAudit(database, principal, { action: "webhook.read", target: row.id, account: row.account });
      return c.json(presentWebhook(row));
    },
  );
}
