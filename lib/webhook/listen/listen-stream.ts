import { randomBytes } from "node:crypto";
import { backoffMs } from "../../backoff.ts";
import type { Database } from "../../db/client.ts";
import { claimListenDispatches } from "../../db/sql/claim-listen-dispatches.ts";
import type { ClaimedDispatch } from "../../db/sql/claim-dispatches.ts";
import { deleteExpiredListenSessions, renewListenSession } from "../../db/sql/listen-session-expiry.ts";
import { LISTEN_WAKE_CHANNEL } from "../../db/sql/listen-wake.ts";
import type { Logger } from "../../log/logger.ts";
import { internalFailure, recordResults, type RecordDeps } from "../outbound/webhook-out-deliver.consumer.ts";
import { signAttempt, type RetryDeps, type SigningDeps } from "../outbound/webhook-out-deliver.handler.ts";
import { LANE_BACKOFF } from "../outbound/webhook-retry-policy.ts";
import { LaneSignal } from "../transport/postgres/lane-signal.ts";
import type { ListenDelivery } from "./listen-messages.ts";
import type { Hooklane } from "../../hooklane.ts";
import { LISTEN, listenBreaker, listenWorkerPrefix } from "./listen-session.ts";

export interface ListenStreamDeps extends RecordDeps {
  signing: SigningDeps;
  retry: RetryDeps;
  /** A session outlives its last stream by this long (`WEBHOOK_LISTEN_TTL`). */
  ttlMs: number;
  /** Deliveries in flight at once per session. */
  maxInFlight: number;
  /** Told when this process deleted an expired session (the subscribed-set cache). */
  onDeleted(): void;
}

/** A stream's dependencies as the product's services give them, on `database` (the request's) and `logger`. */
export function listenStreamDeps(
  hooklane: Pick<Hooklane, "config" | "mailer" | "secrets" | "subscriptions">,
  database: Database,
  logger: Logger,
): ListenStreamDeps {
  const { config, mailer, secrets, subscriptions } = hooklane;
  return {
    database,
    logger,
    mailer,
    breaker: listenBreaker(config.breaker),
    signing: { brand: config.brand, secrets },
    retry: { retrySchedule: config.retrySchedule },
    ttlMs: config.listenTtlMs,
    maxInFlight: config.caps.perWebhook,
    onDeleted: () => subscriptions.invalidate(),
  };
}

/** Where a stream's messages go: the open connection to the CLI. */
export interface ListenOutlet {
  delivery(delivery: ListenDelivery): Promise<void>;
  /** Keeps the connection (and any proxy on the way) alive; sent at every renewal. */
  ping(): Promise<void>;
}

/**
 * Serves one open stream of listen session `webhookId` until `signal`
 * aborts (the CLI went away) or the session is over (deleted or expired).
 * While open it renews the session every third of its TTL and, woken by a
 * NOTIFY naming its session (LISTEN_WAKE_CHANNEL: a dispatch routed,
 * restarted or tested, a report recorded), by a retry or a lease falling due,
 * or every `LISTEN.maxIdleMs`, leases the session's due dispatches under this
 * stream's own worker id, signs each as the lane does and pushes it. The CLI
 * reports each result to any API instance (see recordListenReports). An
 * attempt that cannot be signed is recorded here as an `internal` failure. A
 * database outage is waited out.
 * Once the stream closes, the session is deleted at its expiry unless a new
 * stream renewed it (the sweeper does the same if this process dies first).
 */
export async function serveListenStream(
  deps: ListenStreamDeps,
  webhookId: string,
  outlet: ListenOutlet,
  signal: AbortSignal,
): Promise<"closed" | "over"> {
  const { database, logger } = deps;
  const workerId = `${listenWorkerPrefix(webhookId)}${randomBytes(4).toString("hex")}`;
  const log = logger.child({ component: "listen", webhookId, workerId });
  const wake = new LaneSignal();
  // Another session's NOTIFY is not this stream's business; an empty one is the listener coming back.
  const unlisten = await database.listen(LISTEN_WAKE_CHANNEL, (payload) => {
    if (payload === webhookId || payload === "") wake.wake();
  });
  const stop = () => wake.close();
  signal.addEventListener("abort", stop);
  const renewEveryMs = deps.ttlMs / 3;
  let renewedAt = -Infinity;
  let failures = 0;
  log.info("listen stream open");
  try {
    while (!signal.aborted) {
      try {
        if (Date.now() - renewedAt >= renewEveryMs) {
          if (!(await renewListenSession(database, webhookId, deps.ttlMs))) return "over";
          renewedAt = Date.now();
          await outlet.ping();
        }
        const claim = await claimListenDispatches(database, {
          webhookId,
          workerId,
          maxInFlight: deps.maxInFlight,
          leaseMs: LISTEN.leaseMs,
        });
        if (!claim.listening) return "over";
        for (const dispatch of claim.dispatches) await push(deps, outlet, workerId, dispatch);
        failures = 0;
        const untilRenewal = renewedAt + renewEveryMs - Date.now();
        // The safety-net look spread out, so streams opened together do not look together.
        const idleMs = LISTEN.maxIdleMs * (0.5 + Math.random() / 2);
        await wake.wait(Math.min(idleMs, claim.waitMs ?? idleMs, untilRenewal));
      } catch (error) {
        if (signal.aborted) break;
        if (!database.outage.report(error)) log.error({ err: error }, "listen stream step failed");
        await wake.wait(backoffMs(LANE_BACKOFF.loop, failures++));
      }
    }
    return "closed";
  } finally {
    signal.removeEventListener("abort", stop);
    await unlisten();
    log.info("listen stream closed");
    expireLater(deps, webhookId, log);
  }
}

/** Signs one leased dispatch and pushes it; one that cannot be signed is recorded as an internal failure. */
async function push(
  deps: ListenStreamDeps,
  outlet: ListenOutlet,
  workerId: string,
  dispatch: ClaimedDispatch,
): Promise<void> {
  let signed;
  try {
    signed = await signAttempt(deps.signing, dispatch, new Date());
  } catch (error) {
    deps.logger.error({ err: error, dispatchId: dispatch.id }, "listen attempt not made");
    await recordResults(deps, workerId, [internalFailure(deps.retry, dispatch, error)]);
    return;
  }
  await outlet.delivery({
    dispatch: dispatch.id,
    lease: workerId,
    attempt: dispatch.attempt,
    event: { id: dispatch.eventId, type: dispatch.eventType },
    payload: dispatch.payload,
    requests: signed.requests,
    signature: signed.manifest,
  });
}

/** After the last renewal's TTL, deletes the session if no stream renewed it meanwhile. */
function expireLater(deps: ListenStreamDeps, webhookId: string, log: Logger): void {
  const timer = setTimeout(() => {
    deleteExpiredListenSessions(deps.database, webhookId)
      .then((deleted) => {
        if (deleted.length === 0) return;
        deps.onDeleted();
        log.info("listen session expired: deleted");
      })
      .catch((error: unknown) => {
        if (!deps.database.outage.report(error)) log.warn({ err: error }, "expired listen session not deleted");
      });
  }, deps.ttlMs + 1_000);
  timer.unref();
}
