import type { OperationRouter } from "../../../lib/api/operation.ts";
import { addListenSessionCreate } from "./listen-session-create.ts";
import { addListenSessionDelete } from "./listen-session-delete.ts";
import { addListenSessionResults } from "./listen-session-results.ts";
import { addListenSessionStream } from "./listen-session-stream.ts";
import { addLaneStatus } from "./lane-status.ts";
import { addAuditLog } from "./audit-log.ts";
import { addEvents } from "./events.ts";
import { addNotifications } from "./notifications.ts";
import { addPoisonMessages } from "./poison-messages.ts";
import { addPortalSessionCreate } from "./portal-session-create.ts";
import { addPortalSessionList } from "./portal-session-list.ts";
import { addPortalSessionRevoke } from "./portal-session-revoke.ts";
import { addWebhookCreate } from "./webhook-create.ts";
import { addWebhookDelete } from "./webhook-delete.ts";
import { addWebhookFilterPreview } from "./webhook-filter-preview.ts";
import { addWebhookDispatchLog } from "./webhook-dispatch-log.ts";
import { addWebhookDispatchRetry } from "./webhook-dispatch-retry.ts";
import { addWebhookDispatchSearch } from "./webhook-dispatch-search.ts";
import { addWebhookEventTypes } from "./webhook-event-types.ts";
import { addHealthHistory } from "./health-history.ts";
import { addWebhookHealth } from "./webhook-health.ts";
import { addWebhookRead } from "./webhook-read.ts";
import { addWebhookRecovery } from "./webhook-recovery.ts";
import { addWebhookRequestConsent } from "./webhook-request-consent.ts";
import { addWebhookResend } from "./webhook-resend.ts";
import { addWebhookRotateSecret } from "./webhook-rotate-secret.ts";
import { addWebhookSigningKeys } from "./webhook-signing-keys.ts";
import { addWebhookTestEvent } from "./webhook-test-event.ts";
import { addWebhookUpdate } from "./webhook-update.ts";

/** Paths of the control plane's own objects: every route under them is scoped to the caller's account. */
export const TENANT_SCOPED_PREFIXES = [
  "/v3/webhooks",
  "/v3/webhook-dispatches",
  "/v3/webhook-resends",
  "/v3/listen-sessions",
  "/v3/audit-log",
  "/v3/notifications",
  "/v3/portal-sessions",
  "/v3/health-history",
  "/v3/events",
  "/v3/webhook-signing-keys",
] as const;
/** Paths of the whole control plane, documented in `/openapi.json`: the scoped objects, the shared catalogue, the lane. */
export const CONTROL_PLANE_PREFIXES = [
  ...TENANT_SCOPED_PREFIXES,
  "/v3/webhook-event-types",
  "/v3/lane",
  "/v3/poison-messages",
] as const;

const under = (prefixes: readonly string[]) => (path: string) =>
  prefixes.some((prefix) => path === prefix || path.startsWith(`${prefix}/`));
export const isTenantScopedPath = under(TENANT_SCOPED_PREFIXES);
export const isControlPlanePath = under(CONTROL_PLANE_PREFIXES);

/**
 * The webhooks control plane: webhooks, their delivery log, retry and
 * recovery, listen sessions, and the event types they can subscribe to.
 * Every query is scoped to the caller (`webhookScope`). Expects
 * `requireAuth` to have run.
 */
export function addWebhookRoutes(router: OperationRouter): void {
  for (const add of [
    addWebhookCreate,
    addWebhookFilterPreview,
    addWebhookRead,
    addWebhookUpdate,
    addWebhookDelete,
    addWebhookRotateSecret,
    addWebhookRequestConsent,
    addWebhookSigningKeys,
    addWebhookTestEvent,
    addWebhookDispatchLog,
    addWebhookDispatchSearch,
    addWebhookDispatchRetry,
    addWebhookRecovery,
    addWebhookResend,
    addWebhookEventTypes,
    addListenSessionCreate,
    addListenSessionStream,
    addListenSessionResults,
    addListenSessionDelete,
    addWebhookHealth,
    addHealthHistory,
    addEvents,
    addLaneStatus,
    addAuditLog,
    addNotifications,
    addPoisonMessages,
    addPortalSessionCreate,
    addPortalSessionList,
    addPortalSessionRevoke,
  ]) {
    add(router);
  }
}
