import { sql } from "drizzle-orm";
import type { OperationRouter } from "../../../lib/api/operation.ts";
import { webhook } from "../../../lib/db/schema.ts";
import { assertSubscribableEvents } from "../../../lib/webhook/catalogue/subscribable-events.ts";
import { generateWebhookSecret } from "../../../lib/webhook/outbound/webhook-signature.ts";
import {
  createListenSessionBody,
  listenSessionWithSecretSchema,
  presentListenSession,
} from "./listen-session-schemas.ts";
import { accountQuotas } from "./account-quotas.ts";
import { sealHeaders } from "../../../lib/webhook/outbound/webhook-custom-headers.ts";
import { assertCustomHeaders } from "./webhook-schemas.ts";

/**
 * `POST /v3/listen-sessions`: what `npm run listen` starts with. The session
 * is an ephemeral webhook of the caller's account, with status `listening`:
 * routed to like any webhook, never claimed by the lane, its deliveries go
 * to the CLI over the stream it opens. Its URL is only the CLI's target, so
 * it needs no allowlist entry. It expires `WEBHOOK_LISTEN_TTL` after its
 * last open stream. Only for an account that exists (422 otherwise), and at
 * most `WEBHOOK_QUOTA_LISTEN_SESSIONS` live at once per account (429 with
 * `Retry-After`), exactly: see accountQuotas.
 */
export function addListenSessionCreate(router: OperationRouter): void {
  router.add(
    {
      method: "post",
      path: "/v3/listen-sessions",
      operationId: "createListenSession",
      summary: "Start a listen session",
      description:
        "Creates an ephemeral webhook whose deliveries travel to the caller over `GET /v3/listen-sessions/{id}/stream`. The signing secret is in this answer only.",
      tag: "Listen sessions",
      body: createListenSessionBody,
      responses: { 201: { description: "Started, with its secret.", schema: listenSessionWithSecretSchema } },
    },
    async (c, { body }) => {
      const { config, secrets, subscriptions } = c.get("hooklane");
      const database = c.get("database");
      const principal = c.get("principal");
      const secret = generateWebhookSecret();
      const events = await assertSubscribableEvents(database, body.events, "account");
      assertCustomHeaders(body.headers, config.brand);
      const secretSealed = await secrets.seal(secret);
      const headers = await sealHeaders(body.headers, secrets);
      const row = await accountQuotas.listenSession(c, principal.account, async (tx) => {
        const [inserted] = await tx.db
          .insert(webhook)
          .values({
            account: principal.account,
            url: body.forwardTo,
            events,
            status: "listening",
            scheme: body.scheme,
            headers,
            description: "listen session",
            secretSealed,
            expiresAt: sql`now() + ${config.listenTtlMs}::int * interval '1 millisecond'`,
            createdBy: principal.sub,
          })
          .returning();
        return inserted!;
      });
      subscriptions.invalidate();
      return c.json({ ...presentListenSession(row), secret }, 201);
    },
  );
}
