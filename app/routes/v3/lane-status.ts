import { z } from "zod";
import type { OperationRouter } from "../../../lib/api/operation.ts";
import { ApiError } from "../../../lib/api/problem.ts";
import type { LaneWorker } from "../../../lib/db/sql/lane-activity.ts";
import { laneStatus, type LaneStatus } from "../../../lib/webhook/health/lane-status.ts";
import { timestamp } from "../../../lib/api/timestamps.ts";

const count = z.number().int();
const workerSchema = z.object({
  id: z.string().describe("`<host>/<pid>/<random>`."),
  started: timestamp.describe("When the worker started."),
  heartbeat: timestamp.describe("Renewed every few seconds while the worker lives."),
  lastClaim: timestamp.nullable().describe("When it last leased dispatches."),
  inFlight: count.describe("Attempts in flight, as of its heartbeat."),
});

export const laneStatusSchema = z
  .object({
    object: z.literal("lane"),
    at: timestamp.describe("The database's clock when this was read."),
    transport: z
      .enum(["postgres", "vercel"])
      .describe(
        "What carries the lane's messages (`WEBHOOK_QUEUE_DRIVER`): `postgres`, the database's own tables, or `vercel`, Vercel Queues.",
      ),
    deliver: z
      .object({
        pending: count.describe("Waiting for their first attempt."),
        error: count.describe("Failed, waiting for a retry."),
        due: count.describe("Due now and held by no lease (including held ones)."),
        inFlight: count.describe("Leased: being attempted."),
        heldInactive: count.describe("Of paused or disabled webhooks: kept until they are active."),
        heldBreaker: count.describe("Of webhooks whose circuit breaker is open."),
        heldConsent: count.describe("Of active webhooks whose endpoint has not answered the consent request yet."),
        lagSeconds: z
          .number()
          .describe(
            "Age of the oldest due dispatch that should be moving (active webhook, breaker not open, no lease).",
          ),
      })
      .describe("Open dispatches: deliveries not finished yet."),
    route: z
      .object({
        due: count.describe("Due now and held by no lease."),
        scheduled: count.describe("Waiting for a retry of their routing."),
        inFlight: count.describe("Leased: being routed."),
        lagSeconds: z.number().describe("Age of the oldest due route message."),
      })
      .describe("Route messages (`webhook_route_job`): events waiting to become their webhooks' dispatches."),
    workers: z
      .array(workerSchema)
      .describe("Live workers: heartbeat younger than the lease. None on Vercel (the lane is a queue consumer)."),
    lostWorkers: z
      .array(workerSchema)
      .describe("Workers whose heartbeat stopped within the last hour without draining (killed, crashed)."),
    throughput: z
      .object({
        minutes: z
          .array(
            z.object({
              minute: timestamp.describe("The minute's start."),
              attempts: count.describe("Attempts recorded in that minute."),
              succeeded: count.describe("Of those, the ones that succeeded."),
            }),
          )
          .describe("Attempts recorded per minute over the last 15 minutes; quiet minutes are absent."),
        recent: z
          .object({
            attempts: count.describe("Attempts recorded."),
            succeeded: count.describe("Of those, the ones that succeeded."),
            perSecond: z.number().describe("Attempts per second over the last five minutes."),
          })
          .describe("Over the last five whole minutes and the current one."),
      })
      .describe("Attempts recorded, test events and listen sessions' included."),
    webhooks: z
      .object({
        active: count.describe("Active: delivered to."),
        paused: count.describe("Paused: deliveries held until made active again."),
        disabled: count.describe("Disabled by the system: deliveries held until made active again."),
      })
      .describe("Webhooks by status, deleted ones and listen sessions left out."),
    breakers: z
      .object({
        open: count.describe("Open: the webhook's due deliveries wait, unattempted."),
        halfOpen: count.describe("Half-open: the open time has passed; the next delivery is a probe."),
      })
      .describe("Circuit breakers not closed, of webhooks not deleted."),
    recoveries: z
      .object({
        pending: count.describe("Waiting for the sweeper."),
        running: count.describe("Being worked through in batches."),
      })
      .describe("Bulk recovery jobs not finished."),
    poisonMessages: count.describe("Messages kept in webhook_poison_message: never retried."),
    listener: z
      .object({
        up: z
          .boolean()
          .describe("Connected and listening on every channel (also true when the process listens on none)."),
        channels: z.array(z.string()).describe("The channels it listens on."),
        downSince: timestamp.nullable().describe("When the session was lost, while it is down; null while up."),
        reconnects: count.describe("Times the session was re-established since the process started."),
      })
      .describe("The answering process's LISTEN session."),
  })
  .meta({
    id: "LaneStatus",
    examples: [
      {
        object: "lane",
        at: "2026-03-01T12:00:00.000Z",
        transport: "postgres",
        deliver: {
          pending: 12,
          error: 3,
          due: 4,
          inFlight: 9,
          heldInactive: 2,
          heldBreaker: 0,
          heldConsent: 0,
          lagSeconds: 0.4,
        },
        route: { due: 0, scheduled: 0, inFlight: 1, lagSeconds: 0 },
        workers: [
          {
            id: "worker-1/4211/9c1e",
            started: "2026-03-01T08:00:00.000Z",
            heartbeat: "2026-03-01T11:59:58.000Z",
            lastClaim: "2026-03-01T11:59:59.000Z",
            inFlight: 9,
          },
        ],
        lostWorkers: [],
        throughput: {
          minutes: [{ minute: "2026-03-01T11:59:00.000Z", attempts: 1180, succeeded: 1172 }],
          recent: { attempts: 5920, succeeded: 5890, perSecond: 19.7 },
        },
        webhooks: { active: 240, paused: 3, disabled: 1 },
        breakers: { open: 1, halfOpen: 0 },
        recoveries: { pending: 0, running: 1 },
        poisonMessages: 0,
        listener: { up: true, channels: ["hooklane_deliver", "hooklane_route"], downSince: null, reconnects: 0 },
      },
    ],
  });

const presentWorker = (w: LaneWorker) => ({
  id: w.id,
  started: w.startedAt.toISOString(),
  heartbeat: w.heartbeatAt.toISOString(),
  lastClaim: w.lastClaimAt?.toISOString() ?? null,
  inFlight: w.inFlight,
});

function presentLaneStatus(
  status: LaneStatus,
  extra: { transport: "postgres" | "vercel"; listener: z.input<typeof laneStatusSchema>["listener"] },
): z.input<typeof laneStatusSchema> {
  const { snapshot } = status;
  const { oldestDueAt: _deliverOldest, ...deliver } = snapshot.deliver;
  const { oldestDueAt: _routeOldest, ...route } = snapshot.route;
  return {
    object: "lane",
    at: snapshot.at.toISOString(),
    transport: extra.transport,
    deliver: { ...deliver, lagSeconds: status.lagSeconds },
    route: { ...route, lagSeconds: status.routeLagSeconds },
    workers: status.workers.live.map(presentWorker),
    lostWorkers: status.workers.lost.map(presentWorker),
    throughput: {
      minutes: status.minutes.map((m) => ({ ...m, minute: m.minute.toISOString() })),
      recent: status.recent,
    },
    webhooks: snapshot.webhooks,
    breakers: snapshot.breakers,
    recoveries: snapshot.recoveries,
    poisonMessages: snapshot.poisonMessages,
    listener: extra.listener,
  };
}

/** `GET /v3/lane` (admins): the lane as operators watch it. */
export function addLaneStatus(router: OperationRouter): void {
  router.add(
    {
      method: "get",
      path: "/v3/lane",
      operationId: "getLaneStatus",
      summary: "Get the lane's status (admins)",
      description:
        "Backlogs, lag, live workers and their last claim, throughput over the last minutes, breakers, recovery jobs and poison messages, read from the ledger in a few bounded statements.",
      tag: "Operations",
      responses: {
        200: { description: "The lane's status.", schema: laneStatusSchema },
        403: { description: "The caller is not an admin." },
      },
    },
    async (c) => {
      if (!c.get("principal").admin) throw new ApiError(403, "Forbidden", "Only an admin can read the lane's status.");
      const { database, config, transport } = c.get("hooklane");
      const status = await laneStatus(database, { liveWithinMs: config.leaseMs });
      const health = database.listenerHealth;
      return c.json(
        presentLaneStatus(status, {
          transport: transport.name,
          listener: {
            up: health.up || health.channels.length === 0,
            channels: health.channels,
            downSince: health.downSince?.toISOString() ?? null,
            reconnects: health.reconnects,
          },
        }),
      );
    },
  );
}
