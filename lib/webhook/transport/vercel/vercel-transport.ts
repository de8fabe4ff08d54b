import { randomUUID } from "node:crypto";
import { QueueClient, type SendOptions } from "@vercel/queue";
import { Agent } from "undici";
import type { Database } from "../../../db/client.ts";
import { clearDispatchesQueued, markDispatchesQueued, type DeliverTarget } from "../../../db/sql/queued-dispatches.ts";
import {
  enqueueRouteJob,
  markRouteJobsForwarded,
  retryRouteJob,
  type ClaimedRouteJob,
} from "../../../db/sql/route-jobs.ts";
import { forEachBounded } from "../../../for-each-bounded.ts";
import { errorFacts } from "../../../log/error-facts.ts";
import type { Logger } from "../../../log/logger.ts";
import {
  DELIVER_TOPIC,
  ROUTE_TOPIC,
  type DeliverMessage,
  type RouteMessage,
} from "../../outbound/webhook-out-queue-registrations.ts";
import type { WebhookTransport } from "../webhook-transport.ts";
import { deliverDelaySeconds, LANE_QUEUE, VERCEL_QUEUES } from "./vercel-queue-limits.ts";

/** How long after it falls due a dispatch's deliver message may take to arrive before the sweep sends another. */
export const DELIVER_MESSAGE_GRACE_MS = 5 * 60_000;
/**
 * How long after a route message is forwarded, or last failed, its outbox row
 * is left alone before the sweep forwards it again (doubling with each
 * forward, at most a day): a message routed in time deletes the row first.
 */
export const ROUTE_MESSAGE_CHECK_MS = 60 * 60_000;
/** How long the sweep leaves a fresh outbox row to the forward that follows its commit. */
export const OUTBOX_FORWARD_GRACE_MS = 30_000;

/** What the transport needs of the queue client: sends, and the push consumer the lane is built from. */
export type VercelQueue = Pick<QueueClient, "send" | "experimental_sendBatch" | "handleCallback">;

/**
 * The production queue client: region and credentials from the deployment
 * (`VERCEL_REGION`, OIDC), sends pinned to it, and sockets that give up on a
 * silent service (the SDK's own `fetch` has no timeout).
 */
export function createQueueClient(): QueueClient {
  const timeout = LANE_QUEUE.sendTimeoutMs;
  return new QueueClient({
    dispatcher: new Agent({ connectTimeout: timeout, headersTimeout: timeout, bodyTimeout: timeout }),
  });
}

/**
 * What a deliver message's idempotency key adds to `<dispatch>:<run>:<attempt>`:
 * a unique part (`fresh`), for a re-send the queue must not drop as a
 * duplicate of an earlier message, or a window's name, so that every sender
 * within it sends one message between them.
 */
export interface KeyOptions {
  fresh?: boolean;
  window?: string;
}

/** One message to send, and what the send asks for. */
interface Outgoing {
  payload: unknown;
  idempotencyKey: string | undefined;
  delaySeconds?: number;
}

export interface VercelTransport extends WebhookTransport {
  readonly name: "vercel";
  /** The queue client: sends, and the lane's push consumer. */
  readonly queue: VercelQueue;
  /**
   * Sends one deliver message per target, in batches with bounded
   * concurrency, each delayed until its row is due (cut at
   * `LANE_QUEUE.maxDelaySeconds`; the lane handles the rest). The
   * idempotency key is `<dispatch>:<run>:<attempt>`, and what `options` add
   * (KeyOptions). Never throws: resolves to the targets the queue did not take.
   */
  sendDeliverMessages(targets: readonly DeliverTarget[], options?: KeyOptions): Promise<DeliverTarget[]>;
  /**
   * Forwards outbox rows' route messages in batches, each naming its row
   * (`outboxId`) and keyed by its event id — on a row's first forward; a
   * later one (the message was lost, or kept failing) adds the forward's
   * number, so the queue takes it as a new message. Resolves, per row,
   * whether the queue took it. A row that is not a route message goes as it
   * is, for the route consumer to record as poison. Never throws.
   */
  forwardRoutes(jobs: readonly ClaimedRouteJob[]): Promise<boolean[]>;
  /**
   * Sends a fresh deliver message for each of these dispatches (as
   * `sendDeliver`, but never a duplicate of the message that first carried
   * it): an invocation handing on work it has no time left to take itself.
   */
  handOver(dispatchIds: readonly string[]): Promise<void>;
  readonly sent: { route: number; deliver: number; fallback: number; refused: number };
}

/**
 * The Vercel Queues transport. A route message is written to the outbox
 * (`webhook_route_job`) in the mutation's transaction and forwarded to the
 * queue after commit; the row goes once the queue took it, and the sweep
 * forwards whatever is left (a queue outage at once, a process that died
 * between commit and forward once `forwardGraceMs` has passed; default
 * OUTBOX_FORWARD_GRACE_MS). A deliver message is sent for what the ledger says
 * (run, attempt, due time), after the row records that a message carries it;
 * one the queue refuses is forgotten there, and the sweep sends it again.
 * Every send keeps the message as long as the service allows and gives up
 * after `LANE_QUEUE.sendTimeoutMs`.
 */
export function createVercelTransport(
  database: Database,
  queue: VercelQueue,
  logger: Logger,
  options: { forwardGraceMs?: number } = {},
): VercelTransport {
  const forwardGraceMs = options.forwardGraceMs ?? OUTBOX_FORWARD_GRACE_MS;
  const sent = { route: 0, deliver: 0, fallback: 0, refused: 0 };
  const log = logger.child({ component: "transport" });

  /** Sends every message of one topic; resolves, per message, whether the queue took it (sent or deferred). */
  async function sendAll(topic: string, messages: readonly Outgoing[]): Promise<boolean[]> {
    const taken = messages.map(() => false);
    const batches: number[][] = [];
    for (let i = 0; i < messages.length; i += VERCEL_QUEUES.batchSize) {
      batches.push(messages.slice(i, i + VERCEL_QUEUES.batchSize).map((_, j) => i + j));
    }
    let refusal: unknown;
    // A request the queue refused or never answered stops the rest: during an outage a fan-out costs a few
    // requests, not one timeout per batch, and what was not sent stays in the ledger for the sweep.
    let down = false;
    await forEachBounded(batches, LANE_QUEUE.sendConcurrency, async (batch) => {
      if (down) return;
      try {
        if (batch.length === 1) {
          const message = messages[batch[0]!]!;
          await withinDeadline(queue.send(topic, message.payload, sendOptions(message)));
          taken[batch[0]!] = true;
          return;
        }
        const results = await withinDeadline(
          queue.experimental_sendBatch(
            topic,
            batch.map((i) => ({ payload: messages[i]!.payload, ...sendOptions(messages[i]!) })),
          ),
        );
        results.forEach((result, j) => {
          if (result.status !== "failed") taken[batch[j]!] = true;
          else refusal ??= new Error(`${result.statusCode}: ${result.error}`);
        });
      } catch (error) {
        down = true;
        refusal ??= error;
      }
    });
    const refused = taken.filter((t) => !t).length;
    if (refused > 0) {
      sent.refused += refused;
      log.warn({ err: refusal, topic, refused, of: messages.length }, "the queue did not take every message");
    }
    return taken;
  }

  async function sendDeliverMessages(targets: readonly DeliverTarget[], options: KeyOptions = {}) {
    const extra = options.fresh ? `:${randomUUID()}` : options.window ? `:${options.window}` : "";
    const taken = await sendAll(
      DELIVER_TOPIC,
      targets.map((t) => ({
        payload: { dispatchId: t.id, run: t.run, attempt: t.attempt } satisfies DeliverMessage,
        idempotencyKey: `${t.id}:${t.run}:${t.attempt}${extra}`,
        delaySeconds: deliverDelaySeconds(t.dueInMs),
      })),
    );
    sent.deliver += taken.filter(Boolean).length;
    return targets.filter((_, i) => !taken[i]);
  }

  /** Marks the rows carried, sends their messages, and forgets the mark of those the queue did not take. */
  async function carry(dispatchIds: readonly string[], options: KeyOptions = {}) {
    const targets = await markDispatchesQueued(database, dispatchIds, DELIVER_MESSAGE_GRACE_MS);
    const unsent = await sendDeliverMessages(targets, options);
    await clearDispatchesQueued(
      database,
      unsent.map((t) => t.id),
    );
  }

  return {
    name: "vercel",
    queue,
    sent,
    sendDeliverMessages,
    forwardRoutes: (jobs) =>
      // The event id is the idempotency key: a message sent twice (the forward and a sweep) is delivered once.
      sendAll(
        ROUTE_TOPIC,
        jobs.map((job) => {
          const eventId = eventIdOf(job.message);
          return {
            payload: isObject(job.message) ? { ...job.message, outboxId: job.id } : job.message,
            idempotencyKey: eventId === undefined || job.attempts <= 1 ? eventId : `${eventId}:${job.attempts}`,
          };
        }),
      ),
    // The row is written at once: the forward after the commit needs its id.
    routesAtCommit: false,
    async enqueueRoute(tx, message: RouteMessage, entry) {
      // Left alone by the sweep for a while: the forward after commit normally carries it first.
      const job = await enqueueRouteJob(tx, message, {
        notBeforeMs: forwardGraceMs,
        owner: entry?.owner,
        attributes: entry?.attributes,
        wake: false,
      });
      // The forward sends what the outbox holds: the owner and attributes read in the transaction travel with it.
      const read = {
        ...(entry?.owner === undefined ? {} : { account: job.account }),
        ...(job.attributes === undefined ? {} : { attributes: job.attributes }),
      };
      return { message: { ...message, ...read }, jobId: job.id };
    },
    async routeCommitted({ message, jobId }) {
      if (jobId === undefined) throw new Error("a route receipt without its outbox row");
      try {
        await withinDeadline(
          queue.send(ROUTE_TOPIC, { ...message, outboxId: jobId }, sendOptions({ idempotencyKey: message.eventId })),
        );
      } catch (error) {
        // Due now for the sweep: the grace was only for this forward.
        sent.fallback++;
        await retryRouteJob(database, jobId, 0, errorFacts(error).message);
        throw error;
      }
      sent.route++;
      // Kept until the route stage has written the event's dispatches: a message lost on the way is sent again.
      await markRouteJobsForwarded(database, [jobId], { checkMs: ROUTE_MESSAGE_CHECK_MS, counted: false });
    },
    sendDeliver: (dispatchIds) => carry(dispatchIds),
    handOver: (dispatchIds) => carry(dispatchIds, { fresh: true }),
  };
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

const eventIdOf = (message: unknown): string | undefined => {
  const eventId = (message as { eventId?: unknown } | null)?.eventId;
  return typeof eventId === "string" ? eventId : undefined;
};

function sendOptions(message: Omit<Outgoing, "payload">): SendOptions {
  return {
    ...(message.idempotencyKey ? { idempotencyKey: message.idempotencyKey } : {}),
    retentionSeconds: LANE_QUEUE.retentionSeconds,
    ...(message.delaySeconds ? { delaySeconds: message.delaySeconds } : {}),
  };
}

/** A queue request that has not answered in time counts as refused. */
export class QueueTimeoutError extends Error {
  override name = "QueueTimeoutError";
}

function withinDeadline<T>(request: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  // Abandoned after the deadline, it may still fail later: nobody is waiting for that.
  request.catch(() => {});
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new QueueTimeoutError(`no answer from the queue within ${LANE_QUEUE.sendTimeoutMs} ms`)),
      LANE_QUEUE.sendTimeoutMs,
    );
  });
  return Promise.race([request, deadline]).finally(() => clearTimeout(timer));
}
