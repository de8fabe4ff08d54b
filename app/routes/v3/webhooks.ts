import { and, desc, lt, or, eq } from "drizzle-orm";
import { Hono } from "hono";
import { z } from "zod";
import { ApiError, notFound } from "../../../lib/api/problem.ts";
import { handler, jsonBody } from "../../../lib/api/handler.ts";
import type { HooklaneEnv } from "../../../lib/api/hono-env.ts";
import { SIGNATURE_SCHEMES, webhook, type Webhook } from "../../../lib/db/schema.ts";
import { assertSubscribableEvents } from "../../../lib/webhook/catalogue/subscribable-events.ts";
import { CallbackUrlError, validateCallbackUrl } from "../../../lib/webhook/outbound/webhook-callback-url.ts";
import { generateWebhookSecret } from "../../../lib/webhook/outbound/webhook-signature.ts";
import { webhookInScope, webhookScope } from "../../../lib/webhook/webhook-scope.ts";

const createBody = z.object({
  url: z.string().min(1).max(2_048),
  events: z.array(z.string().min(1)).min(1).max(200),
  description: z.string().max(500).default(""),
  scheme: z.enum(SIGNATURE_SCHEMES).default("hooklane-v1"),
  /** `global` hears every account's events; admins only. */
  scope: z.enum(["account", "global"]).default("account"),
});

const listQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(50),
  cursor: z.string().optional(),
});

/** The public shape of a webhook: never its secret. */
export function presentWebhook(row: Webhook) {
  return {
    id: row.id,
    object: "webhook",
    url: row.url,
    events: row.events,
    status: row.status,
    scheme: row.scheme,
    description: row.description,
    scope: row.account === null ? "global" : "account",
    account: row.account,
    disabledReason: row.disabledReason,
    created: row.createdAt.toISOString(),
    updated: row.updatedAt.toISOString(),
  };
}

export function webhookRoutes() {
  const app = new Hono<HooklaneEnv>();

  app.post(
    "/v3/webhooks",
    handler(async (c) => {
      const { config, database, secrets, subscriptions } = c.var.hooklane;
      const principal = c.var.principal;
      const body = createBody.parse(await jsonBody(c));
      if (body.scope === "global" && !principal.admin) {
        throw new ApiError(403, "Forbidden", "Only admins can create global webhooks.");
      }
      try {
        validateCallbackUrl(body.url, { allowedHosts: config.allowedHosts });
      } catch (error) {
        if (!(error instanceof CallbackUrlError)) throw error;
        throw new ApiError(422, "Unprocessable Content", `url: ${error.message}`, {
          errors: [{ field: "url", message: error.message }],
        });
      }
      const secret = generateWebhookSecret();
      const [row] = await database.db
        .insert(webhook)
        .values({
          account: body.scope === "global" ? null : principal.account,
          url: body.url,
          events: await assertSubscribableEvents(database, body.events),
          scheme: body.scheme,
          description: body.description,
          secretSealed: await secrets.seal(secret),
          createdBy: principal.sub,
        })
        .returning();
      subscriptions.invalidate();
      // The secret is shown here, once; afterwards only its sealed form exists.
      return c.json({ ...presentWebhook(row!), secret }, 201);
    }),
  );

  app.get(
    "/v3/webhooks",
    handler(async (c) => {
      const { limit, cursor } = listQuery.parse(c.req.query());
      const principal = c.var.principal;
      const after = cursor ? await cursorRow(c.var.hooklane.database.db, principal, cursor) : undefined;
      const rows = await c.var.hooklane.database.db
        .select()
        .from(webhook)
        .where(
          and(
            webhookScope(principal),
            after
              ? or(
                  lt(webhook.createdAt, after.createdAt),
                  and(eq(webhook.createdAt, after.createdAt), lt(webhook.id, after.id)),
                )
              : undefined,
          ),
        )
        .orderBy(desc(webhook.createdAt), desc(webhook.id))
        .limit(limit + 1);
      const page = rows.slice(0, limit);
      return c.json({
        object: "list",
        data: page.map(presentWebhook),
        nextCursor: rows.length > limit ? page.at(-1)!.id : null,
      });
    }),
  );

  app.get(
    "/v3/webhooks/:id",
    handler(async (c) => {
      const [row] = await c.var.hooklane.database.db
        .select()
        .from(webhook)
        .where(webhookInScope(c.var.principal, c.req.param("id") ?? ""));
      if (!row) throw notFound("webhook");
      return c.json(presentWebhook(row));
    }),
  );

  return app;
}

async function cursorRow(
  db: HooklaneEnv["Variables"]["hooklane"]["database"]["db"],
  principal: HooklaneEnv["Variables"]["principal"],
  id: string,
) {
  const [row] = await db
    .select({ id: webhook.id, createdAt: webhook.createdAt })
    .from(webhook)
    .where(webhookInScope(principal, id));
  if (!row) throw new ApiError(400, "Bad Request", "cursor: unknown cursor");
  return row;
}
