import type { Database } from "../../db/client.ts";
import { isConnectionError } from "../../db/database-outage.ts";
import type { ClaimedDispatch } from "../../db/sql/claim-dispatches.ts";
import { recordAttempts, type BreakerRule, type OpenedBreaker } from "../../db/sql/record-attempts.ts";
import { errorFacts } from "../../log/error-facts.ts";
import type { Logger } from "../../log/logger.ts";
import type { Mailer } from "../../mail/smtp-mailer.ts";
import type { LaneMetrics } from "../../metrics/lane-metrics.ts";
import {
  attemptDispatch,
  attemptResult,
  type AttemptResult,
  type DeliverDeps,
  type RetryDeps,
} from "./webhook-out-deliver.handler.ts";
import { applyAttemptConsequences } from "./webhook-owner-notifier.ts";
import { INTERNAL_RETRY_MS } from "./webhook-retry-policy.ts";

/** What recording attempts needs, wherever they were made. */
export interface RecordDeps {
  database: Database;
  logger: Logger;
  /** How endpoints' circuit breakers are judged (BREAKER, as configured). */
  breaker: BreakerRule;
  /** Owners' e-mail, when SMTP is configured. */
  mailer?: Mailer | undefined;
  /** This process's lane metrics; none where nothing scrapes them (Vercel) or with METRICS_ENABLED=false. */
  metrics?: LaneMetrics | undefined;
  /** False where no sweeper listens for a wake-up (Vercel's runs on a cron): nothing is NOTIFY'd for it. */
  sweepersListen?: boolean;
}

/** What the deliver stage needs besides the attempt itself, whichever transport carries it. */
export interface DeliverConsumerDeps extends RecordDeps {
  deliver: DeliverDeps;
}

/**
 * The `webhook-out-deliver` consumer's attempt for one leased dispatch. Never
 * throws: an attempt that cannot even be made (a secret that will not
 * unseal, a bug) is an `internal` failure that follows RETRY like any other,
 * waiting at least a minute — on every transport alike.
 */
export async function attemptClaimed(deps: DeliverConsumerDeps, dispatch: ClaimedDispatch): Promise<AttemptResult> {
  deps.metrics?.attemptStarting(dispatch, Date.now());
  try {
    return await attemptDispatch(deps.deliver, dispatch);
  } catch (error) {
    deps.logger.error({ err: error, dispatchId: dispatch.id, webhookId: dispatch.webhookId }, "attempt not made");
    return internalFailure(deps.deliver, dispatch, error);
  }
}

/** The result of an attempt that could not be made: an `internal` failure, looked at again in a minute at the soonest. */
export function internalFailure(deps: RetryDeps, dispatch: ClaimedDispatch, error: unknown): AttemptResult {
  return attemptResult(deps, dispatch, {
    startedAt: new Date(),
    durationMs: 0,
    outcome: {
      kind: "failure",
      errorClass: "internal",
      message: `the attempt could not be made: ${errorFacts(error).message}`,
      statusCode: null,
      responseExcerpt: null,
      retryAfterMs: INTERNAL_RETRY_MS,
      gone: false,
    },
    signature: { timestamp: 0, scheme: dispatch.scheme, signatures: 0 },
  });
}

/**
 * Records finished attempts and applies what they mean (410 disables, the
 * owner hears of exhaustion, breakers open), counts them in the lane's
 * metrics, then logs one line per attempt.
 * Nothing a subscriber sent can block other results: text is made safe for
 * PostgreSQL, a batch aborted by a deadlock or a serialization failure is
 * sent again as it is, and a batch the database still refuses is split until
 * the one record at fault is found, which is then recorded without its text
 * and with the reason (or, failing that too, left for its lease to run out and
 * be attempted again). Throws only when the database is unreachable, or keeps
 * aborting the batch for what runs beside it: the caller keeps the results
 * and tries again.
 */
export async function recordResults(
  deps: RecordDeps,
  workerId: string,
  results: readonly AttemptResult[],
): Promise<void> {
  const opened = await recordIsolated(deps, workerId, results);
  deps.metrics?.attemptsRecorded(results);
  deps.metrics?.breakersOpened(opened.length);
  if (results.some((r) => r.gone)) {
    await applyAttemptConsequences(deps.database, results, deps.logger, deps.sweepersListen !== false);
  }
  logOutcomes(deps.logger, results, opened);
}

/** A statement aborted for what ran beside it, not for what it holds: deadlock_detected, serialization_failure. */
const TRANSIENT_CODES = new Set(["40P01", "40001"]);
const isTransient = (error: unknown) => TRANSIENT_CODES.has(errorFacts(error).code ?? "");
/** Times a batch is sent again at once after a transient failure; then the caller keeps it, as in an outage. */
const TRANSIENT_RETRIES = 3;

async function recordIsolated(
  deps: RecordDeps,
  workerId: string,
  results: readonly AttemptResult[],
  transientRetries = TRANSIENT_RETRIES,
): Promise<OpenedBreaker[]> {
  try {
    return await recordAttempts(deps.database, workerId, results, deps.breaker);
  } catch (error) {
    if (isConnectionError(error)) throw error;
    if (isTransient(error)) {
      // Nothing in the batch is at fault: it is never split or stripped for this.
      if (transientRetries === 0) throw error;
      // The other statement has gone on: the same batch, as it is, records now.
      deps.logger.warn({ err: error, attempts: results.length }, "recording attempts aborted; sending it again");
      await new Promise((resolve) => setTimeout(resolve, 10 + Math.random() * 40));
      return recordIsolated(deps, workerId, results, transientRetries - 1);
    }
    if (results.length > 1) {
      const half = Math.ceil(results.length / 2);
      return [
        ...(await recordIsolated(deps, workerId, results.slice(0, half))),
        ...(await recordIsolated(deps, workerId, results.slice(half))),
      ];
    }
    const [result] = results as [AttemptResult];
    const reason = `the attempt's record was refused (${errorFacts(error).code ?? "error"}): ${errorFacts(error).message}`;
    deps.logger.error(
      { err: error, dispatchId: result.dispatchId },
      "attempt record refused; recording it without its text",
    );
    const bare: AttemptResult = {
      ...result,
      responseExcerpt: null,
      errorClass: result.outcome === "success" ? null : "internal",
      errorMessage: reason.slice(0, 500),
    };
    try {
      return await recordAttempts(deps.database, workerId, [bare], deps.breaker);
    } catch (again) {
      if (isConnectionError(again) || isTransient(again)) throw again;
      deps.logger.error(
        { err: again, dispatchId: result.dispatchId },
        "attempt not recorded; its lease will run out and it will be attempted again",
      );
      return [];
    }
  }
}

function logOutcomes(logger: Logger, results: readonly AttemptResult[], opened: readonly OpenedBreaker[]): void {
  // Successes log at debug: below that level a delivered batch costs no line object at all.
  const successes = logger.isLevelEnabled("debug");
  for (const r of results) {
    if (r.status === "success" && !successes) continue;
    const line = {
      webhookId: r.webhookId,
      dispatchId: r.dispatchId,
      eventId: r.eventId,
      attempt: r.attempt,
      outcome: r.outcome,
      errorClass: r.errorClass,
      statusCode: r.statusCode,
      durationMs: r.durationMs,
      ...(r.traceId ? { trace_id: r.traceId } : {}),
    };
    if (r.status === "success") logger.debug(line, "delivered");
    else if (r.status === "exhausted") logger.warn(line, "delivery exhausted: no attempt left");
    else logger.info({ ...line, retryInMs: r.retryInMs }, "attempt failed; retrying");
  }
  for (const b of opened) {
    logger.warn(
      { webhookId: b.webhookId, failures: b.failures, openForMs: Math.round(b.openForMs) },
      "circuit breaker open: the endpoint is unreachable; its deliveries wait for a probe",
    );
  }
}
