import { ConfigError } from "../../../config/env.ts";
import { LANE_MAX_DURATION_SECONDS, VERCEL_FUNCTIONS } from "./vercel-project.ts";

/**
 * Every limit of Vercel Queues the lane depends on, in one place. Sources, as
 * shipped with the SDK this project pins (`@vercel/queue` 0.6.0):
 *
 * - [README] `node_modules/@vercel/queue/README.md`, "Service Limits & Constraints"
 * - [types]  `node_modules/@vercel/queue/dist/index.d.ts`
 * - [cli]    the function schema of the `vercel` CLI (`@vercel/build-utils`), for triggers
 *
 * A figure marked ASSUMPTION is stated by none of them; the emulator the tests
 * run against (`test/support/vercel-queue-emulator.ts`) encodes the same
 * figures, and docs/deploy.md lists the assumptions.
 */
export const VERCEL_QUEUES = {
  /** A message's time to live: 24 h unless the send asks otherwise, 60 s to 7 d. [README "Publishing Messages"; types `SendOptions.retentionSeconds`] */
  retentionSeconds: { default: 86_400, min: 60, max: 604_800 },
  /** A send's delay: 0 to 7 d, and never beyond the message's own retention. [README; types `SendOptions.delaySeconds`] */
  maxDelaySeconds: 604_800,
  /**
   * How long a delivered message stays invisible (its lock): 300 s by default,
   * 30 s to 1 h. [README "Receiving Messages"; types `handleCallback` "max: 3600"]
   * A retry directive's `afterSeconds` is sent as a visibility change (the SDK's
   * `ConsumerGroup.processMessage`), so it has the same maximum.
   * ASSUMPTION: the 30 s minimum applies to locks, not to `afterSeconds` (the
   * README's own retry examples ask for 5 s).
   */
  visibilitySeconds: { default: 300, min: 30, max: 3_600 },
  /**
   * Idempotency keys: at most 256 characters (longer ones are refused with a
   * 400); a repeated key is accepted but delivered once, within
   * `min(retention, 24 h)` of the first send. [README; types `SendOptions.idempotencyKey`]
   */
  idempotencyKey: { maxLength: 256, maxWindowSeconds: 86_400 },
  /** Messages per batch send. [types `experimental_sendBatch` "up to 100"; the SDK throws a RangeError beyond] */
  batchSize: 100,
  /** One message's payload. [README "Throughput & Storage"] ASSUMPTION: a batch request is bounded by the same figure. */
  maxPayloadBytes: 100 * 1024 * 1024,
  /** `queue/v2beta` triggers per function. [cli: "experimentalTriggers can only have one item for queue/v2beta"] */
  triggersPerFunction: 1,
} as const;

/** What the lane asks of the service, within VERCEL_QUEUES. */
export const LANE_QUEUE = {
  /**
   * Every message is kept as long as the service allows: a lane that cannot
   * consume for days (a broken deploy, the database down) loses no route
   * message, and any delay up to `maxDelaySeconds` is accepted.
   */
  retentionSeconds: VERCEL_QUEUES.retentionSeconds.max,
  /**
   * The longest delay a send asks for; a longer wait is cut here and its
   * remainder handled by the not-yet-due path. It leaves a day of the
   * retention for the message to be consumed after it shows up.
   */
  maxDelaySeconds: VERCEL_QUEUES.retentionSeconds.max - 86_400,
  /** The longest a not-yet-due message is put back for (a visibility change). */
  maxLookAgainSeconds: VERCEL_QUEUES.visibilitySeconds.max,
  /** A message that would have to wait until this close to its expiry is replaced by a fresh one instead. */
  expiryMarginSeconds: 3_600,
  /** Batch requests in flight at once per sending call: a 10,000-webhook fan-out is 100 requests, 4 at a time. */
  sendConcurrency: 4,
  /** A send or batch send that has not answered by then counts as refused; the ledger still holds its work. */
  sendTimeoutMs: 10_000,
} as const;

/** The deliver delay to ask for, in whole seconds, for a row due in `dueInMs` (≤ 0: now), cut at `LANE_QUEUE.maxDelaySeconds`. */
export function deliverDelaySeconds(dueInMs: number): number {
  return Math.min(Math.max(0, Math.ceil(dueInMs / 1_000)), LANE_QUEUE.maxDelaySeconds);
}

/**
 * What becomes of a message that must wait `waitMs` more: put back for at
 * most `maxLookAgainSeconds` (it comes back and waits again), or, when that
 * would bring it too close to its expiry, replaced by a fresh message.
 */
export function lookAgainPlan(
  waitMs: number,
  message: { expiresAt: Date },
  now: number,
): { afterSeconds: number } | { replace: true } {
  const afterSeconds = Math.min(Math.max(1, Math.ceil(waitMs / 1_000)), LANE_QUEUE.maxLookAgainSeconds);
  const backAt = now + afterSeconds * 1_000;
  return backAt + LANE_QUEUE.expiryMarginSeconds * 1_000 <= message.expiresAt.getTime()
    ? { afterSeconds }
    : { replace: true };
}

/**
 * How a message held back by a cap or a rate limit with no invocation at its
 * webhook to take it next looks again: never sooner than `floorMs`, when its
 * turn should come, stretched by up to `jitter` so held messages do not come
 * back together.
 */
export const HELD_LOOK_AGAIN = { floorMs: 2_000, capMs: 5_000, jitter: 0.5 } as const;

/** Room the lane keeps, beside the subscriber's deadline, to claim, record and send the retry. */
export const LANE_ATTEMPT_OVERHEAD_MS = 15_000;

/** The lane's timings on Vercel, checked against each other. */
export interface VercelLaneTimings {
  /** The lock on a message being handled (the SDK renews it while the handler runs). */
  visibilitySeconds: number;
  /** The database lease on the dispatch a message names. */
  leaseMs: number;
  /**
   * How long after it starts an invocation may still take another attempt of
   * the same webhook: the function's maxDuration less the delivery deadline
   * and the room to claim and record it.
   */
  continueWithinMs: number;
}

/**
 * Ties the delivery deadline, the database lease, the message's visibility
 * and the lane's `maxDuration` together, or throws a ConfigError naming the
 * variable at fault. The lease lasts as long as the function may live, so no
 * lease ever runs out under a live attempt and none needs renewing; the
 * visibility matches it, so a killed function's message comes back when its
 * lease has ended.
 */
export function vercelLaneTimings(config: { timeoutMs: number }): VercelLaneTimings {
  const maxDurationMs = LANE_MAX_DURATION_SECONDS * 1_000;
  if (config.timeoutMs + LANE_ATTEMPT_OVERHEAD_MS > maxDurationMs) {
    throw new ConfigError(
      `Invalid configuration:\n  WEBHOOK_TIMEOUT_MS: ${config.timeoutMs} ms leaves no room in the lane's ` +
        `${LANE_MAX_DURATION_SECONDS} s maxDuration to claim and record the attempt; at most ` +
        `${maxDurationMs - LANE_ATTEMPT_OVERHEAD_MS} on Vercel`,
    );
  }
  const visibilitySeconds = LANE_MAX_DURATION_SECONDS;
  const { min, max } = VERCEL_QUEUES.visibilitySeconds;
  if (visibilitySeconds < min || visibilitySeconds > max) {
    throw new ConfigError(
      `the lane's maxDuration (${visibilitySeconds} s) is outside the visibility range ${min}–${max} s`,
    );
  }
  return {
    visibilitySeconds,
    leaseMs: visibilitySeconds * 1_000,
    continueWithinMs: maxDurationMs - config.timeoutMs - LANE_ATTEMPT_OVERHEAD_MS,
  };
}

/** The sweeper's time budget: its maxDuration less a margin to answer, or less when the invocation's deadline is nearer. */
export function sweepBudgetMs(deadline: Date | undefined, now: number): number {
  const budget = (VERCEL_FUNCTIONS.sweeper.maxDurationSeconds - SWEEP_ANSWER_MARGIN_S) * 1_000;
  return deadline ? Math.max(0, Math.min(budget, deadline.getTime() - now - SWEEP_ANSWER_MARGIN_S * 1_000)) : budget;
}

const SWEEP_ANSWER_MARGIN_S = 15;
