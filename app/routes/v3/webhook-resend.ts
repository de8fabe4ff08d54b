import { and, eq, isNull, or } from "drizzle-orm";
import { z } from "zod";
import type { OperationRouter } from "../../../lib/api/operation.ts";
import { notFound } from "../../../lib/api/problem.ts";
import { timestampInput } from "../../../lib/api/timestamps.ts";
import { whenFieldsValid } from "../../../lib/api/validation-errors.ts";
import { recordAudit } from "../../../lib/audit/audit-log.ts";
import { webhookRecovery } from "../../../lib/db/schema.ts";
import { recoveryOutcome } from "../../../lib/db/sql/recovery-jobs.ts";
import { wakeSweepers } from "../../../lib/webhook/sweeper/webhook-sweeper.ts";
import { accountQuotas } from "./account-quotas.ts";
import { presentResend, resendSchema } from "./dispatch-schemas.ts";
import { idParams } from "./resource-fields.ts";

const resendBody = z
  .strictObject({
    eventType: z.string().min(1).max(200).describe("The event type to send again, e.g. `payment-debt.created`."),
    since: timestampInput.describe("Events created at or after this time."),
    until: timestampInput.optional().describe("…and before this time; default now."),
    account: z
      .string()
      .min(1)
      .max(100)
      .optional()
      .describe("Support only: the account whose webhooks get them again (others: their own account)."),
  })
  .refine((body) => (body.until ? Date.parse(body.until) : Date.now()) > Date.parse(body.since), {
    path: ["until"],
    message: "must be later than since (until defaults to now)",
    when: whenFieldsValid,
  })
  .meta({ examples: [{ eventType: "payment-debt.created", since: "2026-11-30T09:30:00Z" }] });

const resendIdParams = idParams("The resend's id (`whr_…`).");

/**
 * Resend: `POST /v3/webhook-resends` starts a background job that sends
 * every event of one type created in a window again to each of the account's
 * webhooks that got it — delivered ones included — as a new run; `GET
 * /v3/webhook-resends/:id` reads its progress. The same job machinery as a
 * recovery (`webhook_recovery`, kind `resend`), advanced by the sweeper in
 * batches; unfinished resends count against the recovery quota on their own.
 */
export function addWebhookResend(router: OperationRouter): void {
  router.add(
    {
      method: "post",
      path: "/v3/webhook-resends",
      operationId: "startWebhookResend",
      summary: "Send an event type again over a time window",
      description:
        "Starts a background job that starts over every finished dispatch (delivered, failing or exhausted) of the type created in the window, across the account's webhooks. Poll the answer for progress.",
      tag: "Delivery log",
      body: resendBody,
      responses: {
        202: { description: "The job, accepted.", schema: resendSchema },
        429: {
          description: "The account has its quota of unfinished recoveries; `Retry-After` says when to look again.",
        },
      },
    },
    async (c, { body }) => {
      const database = c.get("database");
      const principal = c.get("principal");
      const account = body.account ?? principal.account;
      // Another account's webhooks are absent to everyone but support.
      if (account !== principal.account && !principal.support) throw notFound("account");
      const row = await accountQuotas.recovery(c, account, "resend", async (tx) => {
        const [started] = await tx.db
          .insert(webhookRecovery)
          .values({
            kind: "resend",
            account,
            eventType: body.eventType,
            since: new Date(body.since),
            until: body.until ? new Date(body.until) : new Date(),
            createdBy: principal.sub,
          })
          .returning();
        await recordAudit(tx, principal, {
          action: "resend.started",
          target: started!.id,
          account,
          detail: {
            eventType: body.eventType,
            since: started!.since.toISOString(),
            until: started!.until.toISOString(),
          },
        });
        return started!;
      });
      // Self-hosted sweepers start it now; Vercel's runs on its cron, and nobody listens there.
      if (c.get("hooklane").transport.name === "postgres") await wakeSweepers(database);
      return c.json(presentResend(row, { delivered: 0, failed: 0 }), 202);
    },
  );

  router.add(
    {
      method: "get",
      path: "/v3/webhook-resends/:id",
      operationId: "getWebhookResend",
      summary: "Read a resend's progress",
      tag: "Delivery log",
      params: resendIdParams,
      responses: { 200: { description: "The job and its counters.", schema: resendSchema } },
    },
    async (c, { params }) => {
      const database = c.get("database");
      const principal = c.get("principal");
      const own = eq(webhookRecovery.account, principal.account);
      const [row] = await database.db
        .select()
        .from(webhookRecovery)
        .where(
          and(
            eq(webhookRecovery.id, params.id),
            eq(webhookRecovery.kind, "resend"),
            principal.support ? undefined : principal.admin ? or(own, isNull(webhookRecovery.account)) : own,
          ),
        );
      if (!row) throw notFound("resend");
      await recordAudit(database, principal, { action: "resend.read", target: row.id, account: row.account });
      return c.json(presentResend(row, await recoveryOutcome(database, row.id)));
    },
  );
}
