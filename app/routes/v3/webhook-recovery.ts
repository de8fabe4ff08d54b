import { and, eq } from "drizzle-orm";
import { z } from "zod";
import { listOf, listPage, pageQuery, readNewestFirst } from "../../../lib/api/list-page.ts";
import type { OperationRouter } from "../../../lib/api/operation.ts";
import { notFound } from "../../../lib/api/problem.ts";
import { timestampInput } from "../../../lib/api/timestamps.ts";
import { whenFieldsValid } from "../../../lib/api/validation-errors.ts";
import { webhookRecovery } from "../../../lib/db/schema.ts";
import { recoveryOutcome } from "../../../lib/db/sql/recovery-jobs.ts";
import { wakeSweepers } from "../../../lib/webhook/sweeper/webhook-sweeper.ts";
import { recordAudit } from "../../../lib/audit/audit-log.ts";
import { findWebhook } from "../../../lib/webhook/webhook-scope.ts";
import { presentRecovery, recoverySchema } from "./dispatch-schemas.ts";
import { accountQuotas } from "./account-quotas.ts";
import { webhookIdParams } from "./webhook-schemas.ts";

const recoverBody = z
  .strictObject({
    since: timestampInput.describe("Recover dispatches of events created at or after this time."),
    until: timestampInput.optional().describe("…and before this time; default now."),
  })
  .refine((body) => (body.until ? Date.parse(body.until) : Date.now()) > Date.parse(body.since), {
    path: ["until"],
    message: "must be later than since (until defaults to now)",
    when: whenFieldsValid,
  })
  .meta({ examples: [{ since: "2026-11-30T09:30:00Z" }] });

const recoveryParams = webhookIdParams.extend({
  recoveryId: z.string().min(1).max(100).describe("The recovery's id (`whr_…`)."),
});

/**
 * Bulk recovery: `POST /v3/webhooks/:id/recover` starts a background job that
 * puts the failed and exhausted dispatches of a window back to pending (a new
 * run each, due now); `GET /v3/webhooks/:id/recoveries/:recoveryId` reads its
 * progress. The lane's sweeper does the work in batches, off the request.
 */
export function addWebhookRecovery(router: OperationRouter): void {
  router.add(
    {
      method: "post",
      path: "/v3/webhooks/:id/recover",
      operationId: "recoverWebhookDispatches",
      summary: "Recover failed deliveries in a time window",
      description: "Starts a background job; poll the answer's recovery for progress.",
      tag: "Delivery log",
      params: webhookIdParams,
      body: recoverBody,
      responses: {
        202: { description: "The job, accepted.", schema: recoverySchema },
        429: {
          description: "The account has its quota of unfinished recoveries; `Retry-After` says when to look again.",
        },
      },
    },
    async (c, { params, body }) => {
      const database = c.get("database");
      const hook = await findWebhook(database, c.get("principal"), params.id, { support: true });
      const row = await accountQuotas.recovery(c, hook.account, "recover", async (tx) => {
        const [started] = await tx.db
          .insert(webhookRecovery)
          .values({
            webhookId: hook.id,
            since: new Date(body.since),
            until: body.until ? new Date(body.until) : new Date(),
            createdBy: c.get("principal").sub,
          })
          .returning();
        await recordAudit(tx, c.get("principal"), {
          action: "recovery.started",
          target: started!.id,
          account: hook.account,
          detail: { webhook: hook.id, since: started!.since.toISOString(), until: started!.until.toISOString() },
        });
        return started!;
      });
      // Self-hosted sweepers start it now; Vercel's runs on its cron, and nobody listens there.
      if (c.get("hooklane").transport.name === "postgres") await wakeSweepers(database);
      return c.json(presentRecovery(row, { delivered: 0, failed: 0 }), 202);
    },
  );

  router.add(
    {
      method: "get",
      path: "/v3/webhooks/:id/recoveries",
      operationId: "listWebhookRecoveries",
      summary: "List a webhook's recoveries",
      description: "The webhook's recovery jobs, running and past, newest first, each with its progress.",
      tag: "Delivery log",
      params: webhookIdParams,
      query: z.strictObject(pageQuery),
      responses: { 200: { description: "A page of recoveries.", schema: listOf(recoverySchema) } },
    },
    async (c, { params, query }) => {
      const database = c.get("database");
      const hook = await findWebhook(database, c.get("principal"), params.id, { support: true });
      await recordAudit(database, c.get("principal"), {
        action: "recovery.read",
        target: hook.id,
        account: hook.account,
      });
      const rows = await readNewestFirst(database.db, webhookRecovery, {
        scope: eq(webhookRecovery.webhookId, hook.id),
        limit: query.limit,
        cursor: query.cursor,
      });
      const page = listPage(rows, query.limit, (row) => row);
      const data = await Promise.all(
        page.data.map(async (row) => presentRecovery(row, await recoveryOutcome(database, row.id))),
      );
      return c.json({ ...page, data });
    },
  );

  router.add(
    {
      method: "get",
      path: "/v3/webhooks/:id/recoveries/:recoveryId",
      operationId: "getWebhookRecovery",
      summary: "Read a recovery's progress",
      tag: "Delivery log",
      params: recoveryParams,
      responses: { 200: { description: "The job and its counters.", schema: recoverySchema } },
    },
    async (c, { params }) => {
      const database = c.get("database");
      const hook = await findWebhook(database, c.get("principal"), params.id, { support: true });
      const [row] = await database.db
        .select()
        .from(webhookRecovery)
        .where(and(eq(webhookRecovery.webhookId, hook.id), eq(webhookRecovery.id, params.recoveryId)));
      if (!row) throw notFound("recovery");
      await recordAudit(database, c.get("principal"), {
        action: "recovery.read",
        target: row.id,
        account: hook.account,
      });
      return c.json(presentRecovery(row, await recoveryOutcome(database, row.id)));
    },
  );
}
