import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import type { Database } from "../../../db/client.ts";
import { claimDispatches, type ClaimedDispatch } from "../../../db/sql/claim-dispatches.ts";
import { nextDispatchDueInMs } from "../../../db/sql/next-dispatch-due.ts";
import { recordAttempts } from "../../../db/sql/record-attempts.ts";
import { recordPoisonMessage } from "../../../db/sql/poison-messages.ts";
import {
  claimRouteJobs,
  deleteRouteJobs,
  nextRouteJobDueInMs,
  retryRouteJob,
  ROUTE_WAKE_CHANNEL,
  type ClaimedRouteJob,
} from "../../../db/sql/route-jobs.ts";
import { attemptDispatch, type AttemptResult, type DeliverDeps } from "../../outbound/webhook-out-deliver.handler.ts";
import { handleRouteMessage } from "../../outbound/webhook-out-route.handler.ts";
import { PoisonMessageError } from "../../outbound/webhook-message-errors.ts";
import { ROUTE_TOPIC, routeMessageSchema } from "../../outbound/webhook-out-queue-registrations.ts";
import { applyAttemptConsequences } from "../../outbound/webhook-owner-notifier.ts";
import type { Mailer } from "../../../mail/smtp-mailer.ts";
import { DELIVER_WAKE_CHANNEL, type PostgresTransport } from "./postgres-transport.ts";

export interface PostgresLaneOptions {
  database: Database;
  transport: PostgresTransport;
  deliver: DeliverDeps;
  batchSize: number;
  /** POSTs in flight at once in this worker. */
  concurrency: number;
  leaseMs: number;
  /** E-mails owners about exhausted dispatches and disabled webhooks (`SMTP_URL`). */
  mailer?: Mailer;
  /** Longest idle sleep: bounds how late an expired lease or another worker's retry is noticed. */
  maxIdleMs?: number;
  workerId?: string;
}

export interface Lane {
  readonly workerId: string;
  /** Stops claiming, lets in-flight attempts finish and records them. */
  stop(): Promise<void>;
}

/**
 * The `webhook-out` lane on the postgres transport: a route consumer and a
 * deliver consumer, each claiming batches with `FOR UPDATE SKIP LOCKED` under
 * a lease, woken by NOTIFY or a local signal, and sleeping until the next
 * scheduled retry otherwise. Any number of these may share one database.
 */
export async function startPostgresLane(options: PostgresLaneOptions): Promise<Lane> {
  const { database, transport } = options;
  const workerId = options.workerId ?? `${hostname()}/${process.pid}/${randomBytes(3).toString("hex")}`;
  const maxIdleMs = options.maxIdleMs ?? 2_000;
  let running = true;

  const unlisten = await Promise.all([
    database.listen(ROUTE_WAKE_CHANNEL, () => transport.routeSignal.wake()),
    database.listen(DELIVER_WAKE_CHANNEL, () => transport.deliverSignal.wake()),
  ]);

  const idleMs = (dueInMs: number | null) => Math.min(maxIdleMs, dueInMs === null ? maxIdleMs : Math.max(0, dueInMs));

  /** Runs `step` until stopped; a failing step (database down) backs off instead of dying. */
  async function loop(name: string, step: () => Promise<void>): Promise<void> {
    let failures = 0;
    while (running) {
      try {
        await step();
        failures = 0;
      } catch (error) {
        failures++;
        console.error(`[lane] ${name} failed (${failures} in a row)`, error);
        await new Promise((resolve) => setTimeout(resolve, Math.min(100 * 2 ** failures, 5_000)));
      }
    }
  }

  // --- webhook-out-route -----------------------------------------------------
  async function routeStep(): Promise<void> {
    const jobs = await claimRouteJobs(database, { workerId, limit: options.batchSize, leaseMs: options.leaseMs });
    if (jobs.length === 0) {
      await transport.routeSignal.wait(idleMs(await nextRouteJobDueInMs(database)));
      return;
    }
    const done = await Promise.all(jobs.map(routeOne));
    await deleteRouteJobs(
      database,
      jobs.filter((_, i) => done[i]).map((job) => job.id),
    );
  }

  /** Routes one job; true when it can be removed (routed, or poison and recorded). */
  async function routeOne(job: ClaimedRouteJob): Promise<boolean> {
    const parsed = routeMessageSchema.safeParse(job.message);
    try {
      if (!parsed.success) throw new PoisonMessageError(parsed.error.message);
      await handleRouteMessage({ database, transport }, parsed.data);
      return true;
    } catch (error) {
      if (error instanceof PoisonMessageError) {
        await recordPoisonMessage(database, ROUTE_TOPIC, job.message, error.message);
        return true;
      }
      const delayMs = Math.min(1_000 * 2 ** job.attempts, 300_000);
      console.error(`[lane] route job ${job.id} failed; retrying in ${delayMs} ms`, error);
      await retryRouteJob(database, job.id, delayMs, String((error as Error)?.message ?? error));
      return false;
    }
  }

  // --- webhook-out-deliver ---------------------------------------------------
  let inFlight = 0;
  const slotFreed = new Set<() => void>();
  const completed: AttemptResult[] = [];
  let flushing: Promise<void> | undefined;

  async function deliverStep(): Promise<void> {
    const capacity = options.concurrency - inFlight;
    if (capacity <= 0) {
      await new Promise<void>((resolve) => slotFreed.add(resolve));
      return;
    }
    const limit = Math.min(options.batchSize, capacity);
    const claimed = await claimDispatches(database, { workerId, limit, leaseMs: options.leaseMs });
    for (const dispatch of claimed) deliverOne(dispatch);
    if (claimed.length < limit) {
      await transport.deliverSignal.wait(idleMs(await nextDispatchDueInMs(database)));
    }
  }

  function deliverOne(dispatch: ClaimedDispatch): void {
    inFlight++;
    attemptDispatch(options.deliver, dispatch)
      .catch((error): AttemptResult => internalFailure(dispatch, error))
      .then((result) => {
        completed.push(result);
        flushing ??= flush();
      })
      .finally(() => {
        inFlight--;
        for (const resolve of slotFreed) resolve();
        slotFreed.clear();
      });
  }

  /** Records finished attempts in batches; whatever finished meanwhile goes in the next statement. */
  async function flush(): Promise<void> {
    let failures = 0;
    while (completed.length > 0) {
      const batch = completed.slice(0, 500);
      try {
        await recordAttempts(database, workerId, batch);
        completed.splice(0, batch.length);
        failures = 0;
        if (batch.some((r) => r.gone || r.status === "exhausted"))
          await applyAttemptConsequences(database, batch, options.mailer);
      } catch (error) {
        // Keep the results and try again; if this worker dies first, the leases
        // expire and the attempts are sent again (at least once).
        failures++;
        console.error(`[lane] recording ${batch.length} attempts failed`, error);
        if (!running && failures >= 5) break;
        await new Promise((resolve) => setTimeout(resolve, Math.min(100 * 2 ** failures, 5_000)));
      }
    }
    flushing = undefined;
    // Some of these may now be due again (retries) or have freed the lease of a sibling.
    transport.deliverSignal.wake();
  }

  const loops = [loop("route", routeStep), loop("deliver", deliverStep)];

  return {
    workerId,
    async stop() {
      running = false;
      transport.routeSignal.close();
      transport.deliverSignal.close();
      for (const resolve of slotFreed) resolve();
      await Promise.all(loops);
      while (inFlight > 0) await new Promise<void>((resolve) => slotFreed.add(resolve));
      await flushing;
      await Promise.all(unlisten.map((stop) => stop()));
    },
  };
}

function internalFailure(dispatch: ClaimedDispatch, error: unknown): AttemptResult {
  console.error(`[lane] dispatch ${dispatch.id} could not be attempted`, error);
  return {
    dispatchId: dispatch.id,
    webhookId: dispatch.webhookId,
    account: dispatch.account,
    eventId: dispatch.eventId,
    attempt: dispatch.attempt,
    status: "error",
    retryInMs: 60_000,
    startedAt: new Date(),
    durationMs: 0,
    outcome: "retry",
    statusCode: null,
    errorClass: "internal",
    errorMessage: String((error as Error)?.message ?? error).slice(0, 500),
    responseExcerpt: null,
    signature: { timestamp: 0, scheme: dispatch.scheme, signatures: 0 },
    gone: false,
  };
}
