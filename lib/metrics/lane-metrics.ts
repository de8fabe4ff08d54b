import { Counter, Gauge, Histogram, type Registry } from "prom-client";

/** What a recorded attempt tells the metrics (an AttemptResult has all of it). */
export interface MeasuredAttempt {
  outcome: string;
  errorClass: string | null;
  durationMs: number;
}

/** A lane running in this process, as its in-flight gauge sees it. */
export interface WatchedLane {
  readonly inFlight: number;
  readonly concurrency: number;
}

/**
 * The lane's own counters and histograms, fed by the shared consumers on
 * whatever transport runs them in this process. Every label is bounded: an
 * outcome, an error class, a route outcome; never an id.
 */
export interface LaneMetrics {
  /** A dispatch's attempt is about to start: its first attempt's delay since the event (the API's 2xx). */
  attemptStarting(dispatch: { attempt: number; payload: string }, startedAt: number): void;
  /** Attempts the ledger recorded. */
  attemptsRecorded(attempts: readonly MeasuredAttempt[]): void;
  /** Circuit breakers a batch of records opened. */
  breakersOpened(count: number): void;
  /** A route message's outcome, and the dispatches it created. */
  routed(outcome: "routed" | "poison" | "retry", dispatches: number): void;
  /** Reports a lane's in-flight attempts and concurrency until the returned function is called. */
  watch(lane: WatchedLane): () => void;
}

const SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** The lane's instruments, registered in `registry`. */
export function createLaneMetrics(registry: Registry): LaneMetrics {
  const registers = [registry];
  const attempts = new Counter({
    name: "hooklane_attempts_total",
    help: "Delivery attempts recorded by this process, by outcome (success, retry, failed, blocked) and error class (none for a success).",
    labelNames: ["outcome", "error_class"],
    registers,
  });
  const attemptSeconds = new Histogram({
    name: "hooklane_attempt_duration_seconds",
    help: "Duration of delivery attempts recorded by this process, from the request to the end of the answer, by outcome.",
    labelNames: ["outcome"],
    buckets: SECONDS,
    registers,
  });
  const deliveryLag = new Histogram({
    name: "hooklane_delivery_lag_seconds",
    help: "From an event's creation (the API's 2xx) to the start of its first attempt, for attempts this process started.",
    buckets: [...SECONDS.slice(0, -1), 60, 300, 3_600],
    registers,
  });
  const breakerOpened = new Counter({
    name: "hooklane_breaker_opened_total",
    help: "Endpoint circuit breakers opened (or re-opened after a failed probe) by attempts this process recorded.",
    registers,
  });
  const routeMessages = new Counter({
    name: "hooklane_route_messages_total",
    help: "Route messages this process consumed, by outcome: routed, poison (recorded, never retried) or retry.",
    labelNames: ["outcome"],
    registers,
  });
  const dispatchesCreated = new Counter({
    name: "hooklane_dispatches_created_total",
    help: "Dispatch rows the route stage created in this process (one per event and matching webhook).",
    registers,
  });
  const lanes = new Set<WatchedLane>();
  const laneGauge = (name: string, help: string, read: (lane: WatchedLane) => number) =>
    new Gauge({
      name,
      help,
      registers,
      collect() {
        let sum = 0;
        for (const lane of lanes) sum += read(lane);
        this.set(sum);
      },
    });
  laneGauge("hooklane_worker_in_flight", "Delivery attempts in flight in this process's lane.", (l) => l.inFlight);
  laneGauge(
    "hooklane_worker_concurrency",
    "Delivery attempts this process's lane may have in flight at once (WEBHOOK_CONCURRENCY); 0 without a lane.",
    (l) => l.concurrency,
  );

  // Label children are looked up once per combination, not hashed on every attempt.
  const attemptChildren = new Map<string, { count: Counter.Internal; seconds: Histogram.Internal<string> }>();
  const childrenOf = (outcome: string, errorClass: string) => {
    const key = `${outcome}\u0000${errorClass}`;
    let children = attemptChildren.get(key);
    if (!children) {
      children = { count: attempts.labels(outcome, errorClass), seconds: attemptSeconds.labels(outcome) };
      attemptChildren.set(key, children);
    }
    return children;
  };
  const routeChildren = {
    routed: routeMessages.labels("routed"),
    poison: routeMessages.labels("poison"),
    retry: routeMessages.labels("retry"),
  };

  return {
    attemptStarting(dispatch, startedAt) {
      if (dispatch.attempt !== 1) return;
      const created = eventCreatedAt(dispatch.payload);
      if (created !== undefined) deliveryLag.observe(Math.max(0, startedAt - created) / 1_000);
    },
    attemptsRecorded(recorded) {
      for (const attempt of recorded) {
        const children = childrenOf(attempt.outcome, attempt.errorClass ?? "none");
        children.count.inc();
        children.seconds.observe(attempt.durationMs / 1_000);
      }
    },
    breakersOpened(count) {
      if (count > 0) breakerOpened.inc(count);
    },
    routed(outcome, dispatches) {
      routeChildren[outcome].inc();
      if (dispatches > 0) dispatchesCreated.inc(dispatches);
    },
    watch(lane) {
      lanes.add(lane);
      return () => void lanes.delete(lane);
    },
  };
}

/** The `created` time (ms) of a stored event body; undefined when it has none. */
function eventCreatedAt(payload: string): number | undefined {
  try {
    const created = (JSON.parse(payload) as { created?: unknown }).created;
    const ms = typeof created === "string" ? Date.parse(created) : NaN;
    return Number.isNaN(ms) ? undefined : ms;
  } catch {
    return undefined;
  }
}
