import type { ClaimedDispatch, InFlightCaps } from "../../../db/sql/claim-dispatches.ts";
import { claimDispatches } from "../../../db/sql/claim-dispatches.ts";
import { isConnectionError } from "../../../db/database-outage.ts";
import { routeAndClaim } from "../../../db/sql/route-and-claim.ts";
import { claimRouteJobs, deleteRouteJobs, retryRouteJob, type ClaimedRouteJob } from "../../../db/sql/route-jobs.ts";
import type { AttemptResult } from "../../outbound/webhook-out-deliver.handler.ts";
import {
  attemptClaimed,
  recordResults,
  type DeliverConsumerDeps,
} from "../../outbound/webhook-out-deliver.consumer.ts";
import { consumeRouteMessage } from "../../outbound/webhook-out-route.consumer.ts";
import { ROUTE_RULES_JSON } from "../../outbound/webhook-out-route.handler.ts";
import { backOff, runLoop } from "./run-loop.ts";
import { recordSpan, SpanKind } from "../../../observability/tracing.ts";
import type { PostgresTransport } from "./postgres-transport.ts";

/** How soon a claim that held rows back under a cap asks to look again (`claimDispatches`' default recheck). */
const CAPPED_RECHECK_MS = 250;
/**
 * A record statement costs about the same for one attempt as for ten, so while other attempts are still running,
 * or a step is about to hand over more, a small batch waits for them to join it, up to this long. Nothing waits on
 * the record: the subscriber has its POST and the slot under the caps is free already. A worker that dies
 * meanwhile leaves the row leased, to be attempted again, as it would a moment earlier.
 */
const RECORD_LINGER_MS = 25;
const RECORD_LINGER_BELOW = 100;
/**
 * Freed slots wake the loop once half of what was in flight at the last step has freed, or this long after the first
 * one did: one step then claims for all of them. A step costs about the same for one dispatch as for fifty, and
 * beside other workers each frees its slots at a fraction of the lane's pace: a step per freed slot would cost a
 * statement per delivery.
 */
const SLOT_GATHER_MS = 20;
/** With no route job of its own but due ones another step holds right now: look again this soon. */
const LOCKED_RECHECK_MS = 20;
/** Other processes are woken for new dispatches this worker had no slot for at most this often (NOTIFY serialises commits). */
const WAKE_OTHERS_EVERY_MS = 50;

/** A result whose record may make rows claimable: anything but a plain success (a probe's closes its breaker). */
const makesClaimable = (result: AttemptResult) =>
  result.status !== "success" || result.probe || result.gone || result.ordered === true;

export interface LaneLoopOptions extends DeliverConsumerDeps {
  transport: PostgresTransport;
  workerId: string;
  /** Route jobs and dispatches taken per step, at most. */
  batchSize: number;
  /** POSTs in flight at once in this worker. */
  concurrency: number;
  /** The dispatch lease, and the route job lease (routing takes milliseconds). */
  leaseMs: number;
  routeLeaseMs: number;
  caps: InFlightCaps;
  /** Longest idle sleep: bounds how late an expired lease or another worker's retry is noticed. */
  maxIdleMs: number;
  running: () => boolean;
}

export interface LaneLoop {
  /** Resolves when the loop has stopped stepping (after `running()` turned false and it was woken). */
  readonly done: Promise<void>;
  readonly inFlight: number;
  /** What this worker works on now: the leases worth renewing. */
  readonly held: { dispatches: readonly string[]; routeJobs: readonly number[] };
  readonly lastClaimAt: Date | undefined;
  /** Once `running()` is false: waits for the loop to stop, for attempts in flight, and records them. */
  drain(): Promise<void>;
}

/**
 * The postgres lane of one worker: one loop, one budget. Each step is one
 * statement that routes the due route jobs and claims due dispatches for the
 * worker's free slots (`routeAndClaim`); the claimed ones are attempted
 * through the shared consumer, at most `concurrency` at once, and finished
 * attempts are recorded in batches, one statement for whatever finished
 * meanwhile. Route jobs the statement hands back (a malformed message, an
 * unknown type) go through the shared consumer, which records poison and
 * reschedules failures; after a step that failed for a reason other than the
 * database, the next batch is routed job by job there. The loop steps again
 * when there is more, when a slot frees and work was waiting for one, when
 * woken (NOTIFY or this process), or when the step said something falls due.
 */
export function startLaneLoop(options: LaneLoopOptions): LaneLoop {
  const { database, transport, workerId } = options;
  const { tracing } = options.deliver;
  const routeDeps = { database, transport, logger: options.logger, metrics: options.metrics, tracing };
  let inFlight = 0;
  let cursor = "";
  let lastClaimAt: Date | undefined;
  const held = new Set<string>();
  let routeJobsHeld: number[] = [];
  const slotFreed = new Set<() => void>();
  const completed: AttemptResult[] = [];
  let flushing: Promise<void> | undefined;
  /** The last claim left due rows behind a cap: a finished attempt frees a slot worth claiming for. */
  let heldBack = false;
  /** The last claim filled every free slot with more due: a freed slot is worth a step. */
  let wantsSlots = false;
  /** Attempts running now, per webhook id: what this worker has in flight under the caps. */
  const attempting = new Map<string, number>();
  /** Ends the wait of a small batch for the attempts still running, when there is one. */
  let lingering: (() => void) | undefined;
  let stepping = false;
  let oneByOne = false;
  let lastWokeOthers = -Infinity;
  let gathering: NodeJS.Timeout | undefined;
  /** Slots freed since the last step began, and how many make a step worth it. */
  let freedSinceStep = 0;
  let gatherTarget = 1;
  let wakeOthersLater: NodeJS.Timeout | undefined;

  /** More attempts are running, or a step under way may start some: a small batch has company coming. */
  const joinersLikely = () => attempting.size > 0 || stepping;
  const batchJoined = () => {
    if (lingering && (!joinersLikely() || completed.length >= RECORD_LINGER_BELOW)) lingering();
  };

  async function step(): Promise<void> {
    if (oneByOne) return stepOneByOne();
    const claimLimit = Math.max(0, Math.min(options.batchSize, options.concurrency - inFlight));
    freedSinceStep = 0;
    gatherTarget = Math.max(1, Math.floor(inFlight / 2));
    clearTimeout(gathering);
    gathering = undefined;
    stepping = true;
    const stepStarted = tracing ? new Date() : undefined;
    let result;
    try {
      result = await routeAndClaim(database, {
        workerId,
        routeLimit: options.batchSize,
        routeLeaseMs: options.routeLeaseMs,
        rulesJson: ROUTE_RULES_JSON,
        claimLimit,
        leaseMs: options.leaseMs,
        caps: options.caps,
        after: cursor,
        held: Object.fromEntries(attempting),
      });
      if (tracing) traceStep(stepStarted!, result.traced, result.claim?.dispatches ?? []);
      // Handed over before the next step is sent, so its `held` has them.
      for (const dispatch of result.claim?.dispatches ?? []) deliverOne(dispatch);
    } catch (error) {
      if (isConnectionError(error)) throw error;
      // A job the statement could not route fails the step: route the next batch job by job, where the
      // consumer reschedules a failing job alone.
      options.logger.error({ err: error }, "a lane step failed; routing the next batch job by job");
      oneByOne = true;
      return;
    } finally {
      stepping = false;
      batchJoined();
    }
    for (const dispatches of result.routed) options.metrics?.routed("routed", dispatches);
    const claim = result.claim;
    const claimed = claim?.dispatches.length ?? 0;
    if (claim) cursor = claim.cursor;
    if (claimed > 0) lastClaimAt = new Date();
    // New dispatches this worker had no slot for: other processes' loops (and listen streams) may take them.
    if (result.dispatches > claimed) wakeOthers();
    if (result.left.length > 0) await consume(result.left);
    await waitForWork(claimLimit, claim, result.found, result.dueMs);
  }

  /** After a step: step again at once if there is more, else sleep until a wake-up, a freed slot or a due time. */
  async function waitForWork(
    claimLimit: number,
    claim: { dispatches: readonly unknown[]; waitMs: number | null; contended: boolean } | undefined,
    routeFound: number,
    routeDueMs: number | null,
  ): Promise<void> {
    if (routeFound >= options.batchSize) return;
    const claimed = claim?.dispatches.length ?? 0;
    wantsSlots = claimLimit === 0 || (claimed === claimLimit && claim?.waitMs === 0);
    // Rows held back by a cap, or passed over for another claim holding their keys (that one is taking from them):
    // a finished attempt frees a slot worth claiming for.
    heldBack =
      claim !== undefined &&
      claimed < claimLimit &&
      (claim.contended || (claim.waitMs !== null && claim.waitMs <= CAPPED_RECHECK_MS));
    if (claimLimit > 0 && claimed === claimLimit && claim?.waitMs === 0 && inFlight < options.concurrency) return;
    let waitMs = options.maxIdleMs;
    if (claim && !wantsSlots && claim.waitMs !== null) waitMs = Math.min(waitMs, claim.waitMs);
    if (claim?.contended) waitMs = Math.min(waitMs, CAPPED_RECHECK_MS);
    if (routeDueMs !== null) waitMs = Math.min(waitMs, Math.max(routeDueMs, LOCKED_RECHECK_MS));
    await transport.signal.wait(waitMs);
  }

  /** The shared consumer, a job at a time, then a claim of its own: a step after one that failed. */
  async function stepOneByOne(): Promise<void> {
    const jobs = await claimRouteJobs(database, { workerId, limit: options.batchSize, leaseMs: options.routeLeaseMs });
    oneByOne = false;
    if (jobs.length > 0) await consume(jobs);
    const claimLimit = Math.max(0, Math.min(options.batchSize, options.concurrency - inFlight));
    if (claimLimit === 0) return;
    stepping = true;
    const claimStarted = tracing ? new Date() : undefined;
    try {
      const claim = await claimDispatches(database, {
        workerId,
        limit: claimLimit,
        leaseMs: options.leaseMs,
        caps: options.caps,
        after: cursor,
        held: Object.fromEntries(attempting),
      });
      cursor = claim.cursor;
      if (tracing) traceStep(claimStarted!, [], claim.dispatches);
      for (const dispatch of claim.dispatches) deliverOne(dispatch);
    } finally {
      stepping = false;
      batchJoined();
    }
  }

  async function consume(jobs: readonly ClaimedRouteJob[]): Promise<void> {
    routeJobsHeld = jobs.map((job) => job.id);
    try {
      const outcomes = await Promise.all(jobs.map((job) => consumeRouteMessage(routeDeps, job.message, job.attempts)));
      const done: number[] = [];
      await Promise.all(
        outcomes.map((outcome, i) => {
          const job = jobs[i]!;
          if (outcome.kind !== "retry") return void done.push(job.id);
          return retryRouteJob(database, job.id, outcome.delayMs, outcome.reason);
        }),
      );
      await deleteRouteJobs(database, done);
    } finally {
      routeJobsHeld = [];
    }
  }

  /**
   * With tracing on: a step's share of each traced event it routed (a route span) and of each traced dispatch it
   * claimed (a claim span), each spanning the step's one statement.
   */
  function traceStep(
    started: Date,
    routed: readonly { traceparent: string; type: string; dispatches: number }[],
    claimed: readonly ClaimedDispatch[],
  ): void {
    const times = { start: started, end: new Date() };
    for (const event of routed) {
      recordSpan(
        tracing!,
        `route ${event.type}`,
        event.traceparent,
        times,
        { "hooklane.event.type": event.type, "hooklane.dispatches": event.dispatches },
        SpanKind.CONSUMER,
      );
    }
    for (const dispatch of claimed) {
      if (!dispatch.traceparent) continue;
      recordSpan(tracing!, `claim ${dispatch.eventType}`, dispatch.traceparent, times, {
        "hooklane.webhook.id": dispatch.webhookId,
        "hooklane.dispatch.id": dispatch.id,
        "hooklane.attempt": dispatch.attempt,
      });
    }
  }

  /** Wakes other processes' loops, at most once per WAKE_OTHERS_EVERY_MS, never dropping the last call. */
  function wakeOthers(): void {
    const since = Date.now() - lastWokeOthers;
    if (since >= WAKE_OTHERS_EVERY_MS) {
      lastWokeOthers = Date.now();
      transport.wakeOtherProcesses().catch((error: unknown) => {
        if (!database.outage.report(error)) options.logger.warn({ err: error }, "waking other workers failed");
      });
    } else {
      wakeOthersLater ??= setTimeout(() => {
        wakeOthersLater = undefined;
        wakeOthers();
      }, WAKE_OTHERS_EVERY_MS - since);
    }
  }

  function freeSlot(): void {
    for (const resolve of slotFreed) resolve();
    slotFreed.clear();
    if (wantsSlots) wakeForSlots();
  }

  /** Wakes the loop for freed slots: once enough have freed since the last step, or SLOT_GATHER_MS after the first. */
  function wakeForSlots(): void {
    if (++freedSinceStep >= gatherTarget) {
      clearTimeout(gathering);
      gathering = undefined;
      transport.signal.wake();
      return;
    }
    gathering ??= setTimeout(() => {
      gathering = undefined;
      transport.signal.wake();
    }, SLOT_GATHER_MS);
  }

  function deliverOne(dispatch: ClaimedDispatch): void {
    inFlight++;
    held.add(dispatch.id);
    const { webhookId } = dispatch;
    attempting.set(webhookId, (attempting.get(webhookId) ?? 0) + 1);
    let over = false;
    const attemptOver = () => {
      // The POST is over: only the record statement still holds the row, not a slot under the caps.
      if (over) return;
      over = true;
      const left = (attempting.get(webhookId) ?? 1) - 1;
      if (left > 0) attempting.set(webhookId, left);
      else attempting.delete(webhookId);
    };
    void attemptClaimed(options, dispatch)
      .then((result) => {
        attemptOver();
        completed.push(result);
        flushing ??= flush();
        // Its slot under the caps is free now (the claim counts it as settled), not once it is recorded.
        if (heldBack) wakeForSlots();
      })
      .finally(() => {
        attemptOver();
        batchJoined();
        inFlight--;
        freeSlot();
      });
  }

  /** Records finished attempts in batches; whatever finished meanwhile goes in the next statement. */
  async function flush(): Promise<void> {
    let failures = 0;
    /** A result recorded after which a claim may find rows it would not have before. */
    let claimable = false;
    while (completed.length > 0) {
      if (completed.length < RECORD_LINGER_BELOW && joinersLikely() && options.running()) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(() => lingering?.(), RECORD_LINGER_MS);
          lingering = () => {
            clearTimeout(timer);
            lingering = undefined;
            resolve();
          };
        });
      }
      const batch = completed.slice(0, 500);
      try {
        await recordResults(options, workerId, batch);
        completed.splice(0, batch.length);
        for (const result of batch) held.delete(result.dispatchId);
        failures = 0;
        claimable ||= batch.some(makesClaimable);
      } catch (error) {
        // The database is unreachable (recordResults isolates everything else): keep the results and
        // try again; if this worker dies first, the leases run out and the attempts are sent again.
        if (!database.outage.report(error)) options.logger.error({ err: error }, "recording attempts failed");
        failures++;
        if (!options.running() && failures >= 5) break;
        await backOff(database, failures - 1);
      }
    }
    flushing = undefined;
    // A retry is due later (the claim tells when), a breaker changed, a webhook went, an ordered event finished (the
    // next of its resource may go): step again. A batch of other successes makes nothing claimable (its slots under
    // the caps were freed when the POSTs ended).
    if (claimable || !options.running()) transport.signal.wake();
  }

  const done = runLoop("lane", step, { running: options.running, database, logger: options.logger });

  return {
    done,
    get inFlight() {
      return inFlight;
    },
    get held() {
      return { dispatches: [...held], routeJobs: routeJobsHeld };
    },
    get lastClaimAt() {
      return lastClaimAt;
    },
    async drain() {
      clearTimeout(wakeOthersLater);
      clearTimeout(gathering);
      freeSlot();
      await done;
      while (inFlight > 0) await new Promise<void>((resolve) => slotFreed.add(resolve));
      await flushing;
    },
  };
}
