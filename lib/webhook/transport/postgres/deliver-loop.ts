import { claimDispatches, type ClaimedDispatch, type InFlightCaps } from "../../../db/sql/claim-dispatches.ts";
import type { AttemptResult } from "../../outbound/webhook-out-deliver.handler.ts";
import {
  attemptClaimed,
  recordResults,
  type DeliverConsumerDeps,
} from "../../outbound/webhook-out-deliver.consumer.ts";
import { backOff, runLoop } from "./lane-loop.ts";
import type { PostgresTransport } from "./postgres-transport.ts";

/** How soon a claim that held rows back under a cap asks to look again (`claimDispatches`' default recheck). */
const CAPPED_RECHECK_MS = 250;
/**
 * A record statement has a fixed cost about that of recording ten attempts, so while other attempts are still
 * running, or a claim of this worker (its route stage's or its deliver loop's) is about to hand it more, a small
 * batch waits for them to join it, up to this long. Nothing waits on the record: the subscriber has its POST and
 * the slot under the caps is free already. Only the ledger shows the attempt later, and a worker that dies
 * meanwhile leaves the row leased, to be attempted again, as it would a moment earlier. A lone attempt, with
 * nothing running and no claim under way, is recorded at once.
 */
const RECORD_LINGER_MS = 20;
const RECORD_LINGER_BELOW = 32;

/** A result whose record may make rows claimable: anything but a plain success (a probe's closes its breaker). */
const makesClaimable = (result: AttemptResult) => result.status !== "success" || result.probe || result.gone;

/**
 * What a claim tells the in-flight book about its worker (`claimDispatches`' `held` and `claim`). A worker's
 * claims run one at a time, so none is ever pending beside another: `held` has what every earlier one took.
 */
export interface ClaimTicket {
  held: Readonly<Record<string, number>>;
  claim: number;
}

export interface DeliverLoopOptions extends DeliverConsumerDeps {
  transport: PostgresTransport;
  workerId: string;
  batchSize: number;
  /** POSTs in flight at once in this worker. */
  concurrency: number;
  leaseMs: number;
  caps: InFlightCaps;
  maxIdleMs: number;
  running: () => boolean;
}

export interface DeliverLoop {
  /** Resolves when the loop has stopped claiming (after `running()` turned false and it was woken). */
  readonly done: Promise<void>;
  readonly inFlight: number;
  /** Dispatches claimed and not yet recorded: the leases worth renewing. */
  readonly held: readonly string[];
  readonly lastClaimAt: Date | undefined;
  /**
   * Runs `claim` once every claim this worker started before it has settled (the route stage's and this
   * loop's take turns), with what the worker has in flight then per webhook (`held`, for the claim's caps) and
   * the claim's number. `claim` hands what it leased to this loop (by claiming here, or `adopt` from the route
   * stage) before it resolves, so the next claim's `held` has it.
   */
  claimTicket<T>(claim: (ticket: ClaimTicket) => Promise<T>): Promise<T>;
  /**
   * Sets aside up to `n` of this worker's free slots for dispatches leased elsewhere in this worker (the
   * route stage's), so the two loops together never exceed `concurrency`. Returns how many were set aside.
   */
  reserve(n: number): number;
  /**
   * Attempts dispatches leased to this worker by another statement (no claim of its own), as if it had
   * claimed them, and gives back the `reserved` slots set aside for them.
   */
  adopt(dispatches: readonly ClaimedDispatch[], reserved: number): void;
  /** Once `running()` is false: waits for the loop to stop claiming, for attempts in flight, and records them. */
  drain(): Promise<void>;
}

/**
 * The deliver consumer on the postgres transport: claims due dispatches
 * fairly (round-robin over webhooks, under the in-flight caps, breakers and
 * rate limits), attempts each through the shared consumer with at most
 * `concurrency` in flight, and records finished attempts in batches — one
 * statement for whatever finished meanwhile.
 */
export function startDeliverLoop(options: DeliverLoopOptions): DeliverLoop {
  const { database, transport, workerId } = options;
  let inFlight = 0;
  /** Slots set aside for dispatches another loop of this worker is leasing right now. */
  let reserved = 0;
  let cursor = "";
  let lastClaimAt: Date | undefined;
  const held = new Set<string>();
  const slotFreed = new Set<() => void>();
  const completed: AttemptResult[] = [];
  let flushing: Promise<void> | undefined;
  let heldBack = false;
  /** Attempts running now, per webhook id: what this worker has in flight under the caps. */
  const attempting = new Map<string, number>();
  /** Ends the wait of a small batch for the attempts still running, when there is one. */
  let lingering: (() => void) | undefined;
  /** Claims of this worker started and not yet settled: each may hand this loop attempts to run. */
  let claiming = 0;
  /** More attempts are running, or a claim under way may start some: a small batch has company coming. */
  const joinersLikely = () => attempting.size > 0 || claiming > 0;
  const batchJoined = () => {
    if (lingering && (!joinersLikely() || completed.length >= RECORD_LINGER_BELOW)) lingering();
  };
  let lastClaim = 0;
  /**
   * Settles when the last claim started has. Claims overlapping in one worker could exceed a cap: one sent
   * before another's rows were handed over does not have them in `held`, and the book's entry for them may
   * already be gone (three overlapping claims, the middle one written last, took 6 under a cap of 4).
   */
  let claimsSettled: Promise<unknown> = Promise.resolve();

  function claimTicket<T>(claim: (ticket: ClaimTicket) => Promise<T>): Promise<T> {
    claiming++;
    const run = claimsSettled.then(() => claim({ held: Object.fromEntries(attempting), claim: ++lastClaim }));
    claimsSettled = run.catch(() => undefined);
    // What it leased has been handed over (or nothing was): a waiting batch with no company left goes now.
    void claimsSettled.then(() => {
      claiming--;
      batchJoined();
    });
    return run;
  }

  /** Slots neither in flight nor set aside for the route stage. */
  const free = () => options.concurrency - inFlight - reserved;

  async function step(): Promise<void> {
    const capacity = free();
    if (capacity <= 0) {
      await new Promise<void>((resolve) => slotFreed.add(resolve));
      return;
    }
    const limit = Math.min(options.batchSize, capacity);
    const claim = await claimTicket(async (ticket) => {
      const claim = await claimDispatches(database, {
        workerId,
        limit,
        leaseMs: options.leaseMs,
        caps: options.caps,
        after: cursor,
        ...ticket,
      });
      for (const dispatch of claim.dispatches) deliverOne(dispatch);
      return claim;
    });
    cursor = claim.cursor;
    // Rows were held back by a cap (the claim asks to look again soon): a finished attempt frees a slot.
    heldBack = claim.dispatches.length < limit && claim.waitMs !== null && claim.waitMs <= CAPPED_RECHECK_MS;
    if (claim.dispatches.length > 0) lastClaimAt = new Date();
    if (claim.dispatches.length < limit) {
      await transport.deliverSignal.wait(Math.min(options.maxIdleMs, claim.waitMs ?? options.maxIdleMs));
    }
  }

  function freeSlot(): void {
    for (const resolve of slotFreed) resolve();
    slotFreed.clear();
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
        if (heldBack) transport.deliverSignal.wake();
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
    // A retry is due later (the claim tells when), a breaker changed, a webhook went: claim again. A batch of
    // plain successes makes nothing claimable (a finished attempt's slot under the caps was freed when the
    // POST ended, with its own wake-up while a cap holds rows back), so it wakes nobody: with the route stage
    // handing over what it routes, a claim after every batch found nothing almost every time.
    if (claimable || !options.running()) transport.deliverSignal.wake();
  }

  const done = runLoop("deliver", step, { running: options.running, database, logger: options.logger });

  return {
    done,
    get inFlight() {
      return inFlight;
    },
    get held() {
      return [...held];
    },
    get lastClaimAt() {
      return lastClaimAt;
    },
    claimTicket,
    reserve(n) {
      const granted = Math.max(0, Math.min(n, free()));
      reserved += granted;
      return granted;
    },
    adopt(dispatches, given) {
      reserved -= given;
      if (dispatches.length > 0) lastClaimAt = new Date();
      // Held (and so renewed by the lease keeper) from here on, exactly like a claimed row.
      for (const dispatch of dispatches) deliverOne(dispatch);
      // What was set aside and not used is free again.
      freeSlot();
    },
    async drain() {
      freeSlot();
      await done;
      while (inFlight > 0) await new Promise<void>((resolve) => slotFreed.add(resolve));
      await flushing;
    },
  };
}
