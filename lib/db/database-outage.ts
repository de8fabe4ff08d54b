import type { Logger } from "../log/logger.ts";
import { errorFacts } from "../log/error-facts.ts";

// SQLSTATE classes and driver codes that mean "the server is not there", not "this statement is wrong".
const CONNECTION_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EPIPE",
  "ENOTFOUND",
  "EAI_AGAIN",
  "57P01", // admin_shutdown
  "57P02", // crash_shutdown
  "57P03", // cannot_connect_now
  "53300", // too_many_connections
]);
const CONNECTION_MESSAGES =
  /Connection terminated|connection error|timeout exceeded when trying to connect|Client was closed|not queryable|the database system is (starting up|shutting down)|WebSocket/i;

/** True when `error` says the database cannot be reached (as opposed to a statement failing). */
export function isConnectionError(error: unknown): boolean {
  const facts = errorFacts(error);
  if (facts.code && (CONNECTION_CODES.has(facts.code) || facts.code.startsWith("08"))) return true;
  return CONNECTION_MESSAGES.test(facts.message);
}

export interface OutageTracker {
  /**
   * Reports a failure. A connection failure is the tracker's to log — one
   * line when the outage starts, a reminder every `remindEveryMs`, one line
   * when the database answers again — and true is returned so the caller
   * stays quiet. Any other error returns false: the caller logs it.
   */
  report(error: unknown): boolean;
  /** True while the database is believed unreachable. */
  readonly down: boolean;
  /**
   * Resolves when the outage under way ends (the probe got an answer) or the
   * tracker is closed; at once when there is none. Lets a loop backing off
   * start again as soon as the database is back.
   */
  recovered(): Promise<void>;
  /** Stops probing (the database is being closed). */
  close(): void;
}

/**
 * Watches one process's database for outages, so that a restart writes three
 * lines instead of one per failed statement. While down, `probe` (a cheap
 * `select 1`) runs every `probeEveryMs` to notice the end of the outage.
 */
export function createOutageTracker(options: {
  logger: Logger;
  probe: () => Promise<unknown>;
  probeEveryMs?: number;
  remindEveryMs?: number;
  now?: () => number;
}): OutageTracker {
  const { logger } = options;
  const probeEveryMs = options.probeEveryMs ?? 500;
  const remindEveryMs = options.remindEveryMs ?? 30_000;
  const now = options.now ?? Date.now;
  let since: number | undefined;
  let failures = 0;
  let remindedAt = 0;
  let timer: NodeJS.Timeout | undefined;
  let closed = false;
  // One promise per outage, however many loops wait on it.
  let recovery: PromiseWithResolvers<void> | undefined;
  const endRecovery = () => {
    recovery?.resolve();
    recovery = undefined;
  };

  const probe = () => {
    timer = undefined;
    if (closed || since === undefined) return;
    options.probe().then(
      () => {
        if (since === undefined) return;
        logger.info({ outageMs: now() - since, failures }, "database reachable again");
        since = undefined;
        endRecovery();
      },
      () => {
        if (!closed) timer = setTimeout(probe, probeEveryMs).unref();
      },
    );
  };

  return {
    report(error) {
      if (!isConnectionError(error)) return false;
      failures = since === undefined ? 1 : failures + 1;
      if (since === undefined) {
        since = remindedAt = now();
        logger.warn({ err: error }, "database unreachable; retrying quietly");
        timer ??= setTimeout(probe, probeEveryMs).unref();
      } else if (now() - remindedAt >= remindEveryMs) {
        remindedAt = now();
        logger.warn({ err: error, outageMs: now() - since, failures }, "database still unreachable");
      }
      return true;
    },
    get down() {
      return since !== undefined;
    },
    recovered() {
      if (since === undefined || closed) return Promise.resolve();
      recovery ??= Promise.withResolvers<void>();
      return recovery.promise;
    },
    close() {
      closed = true;
      clearTimeout(timer);
      endRecovery();
    },
  };
}
