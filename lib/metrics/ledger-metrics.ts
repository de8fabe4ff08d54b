import { Gauge } from "prom-client";
import { readLaneSnapshot, type LaneSnapshot } from "../db/sql/lane-snapshot.ts";
import type { Hooklane } from "../hooklane.ts";

/** Scrapes within this long of each other share one read of the ledger. */
const SHARED_FOR_MS = 1_000;

/**
 * Adds what the ledger holds to the process's metrics (none with
 * METRICS_ENABLED=false), read on scrape by one bounded
 * statement (`readLaneSnapshot`) shared by every gauge and by scrapes that
 * come within a second of each other: backlogs, lag, webhooks, breakers,
 * recovery jobs, poison messages, live workers. Nothing runs between
 * scrapes, and a scrape never waits on the database for more than
 * `OPS_READ_TIMEOUT_MS`: when the read fails, `hooklane_ledger_up` is 0 and
 * the other gauges keep their last values. For the API process only: every
 * API replica reports the same numbers (aggregate with max, not sum). A
 * worker counts as live while its heartbeat is younger than the lease.
 */
export function exposeLedgerMetrics(hooklane: Pick<Hooklane, "metrics" | "database" | "config" | "logger">): void {
  const { metrics, database } = hooklane;
  if (!metrics) return;
  const registers = [metrics.registry];
  const log = hooklane.logger.child({ component: "metrics" });
  let shared: { at: number; read: Promise<LaneSnapshot | undefined> } | undefined;
  let lastFailure: string | undefined;

  const snapshot = (): Promise<LaneSnapshot | undefined> => {
    if (shared && Date.now() - shared.at < SHARED_FOR_MS) return shared.read;
    const started = performance.now();
    const read = readLaneSnapshot(database, { liveWithinMs: hooklane.config.leaseMs }).then(
      (value) => {
        readSeconds.set((performance.now() - started) / 1_000);
        lastFailure = undefined;
        return value;
      },
      (error: unknown) => {
        // An outage is the tracker's to tell; anything else once, until a read succeeds again.
        const message = (error as Error)?.message;
        if (!database.outage.report(error) && message !== lastFailure) {
          log.warn({ err: error }, "reading the ledger for metrics failed");
        }
        lastFailure = message;
        return undefined;
      },
    );
    shared = { at: Date.now(), read };
    return read;
  };

  /** A gauge set from the snapshot; left as it was when the read failed. */
  const gauge = (name: string, help: string, labelNames: string[], set: (g: Gauge, s: LaneSnapshot) => void): Gauge =>
    new Gauge({
      name,
      help,
      labelNames,
      registers,
      async collect() {
        const s = await snapshot();
        if (s) set(this, s);
      },
    });

  const readSeconds = new Gauge({
    name: "hooklane_ledger_read_seconds",
    help: "How long the last read of the ledger for these metrics took.",
    registers,
  });
  new Gauge({
    name: "hooklane_ledger_up",
    help: "1 when this scrape read the ledger, 0 when the read failed or timed out.",
    registers,
    async collect() {
      this.set((await snapshot()) ? 1 : 0);
    },
  });
  gauge(
    "hooklane_deliver_backlog",
    "Open dispatches by status: pending (first attempt) or error (waiting for a retry).",
    ["status"],
    (g, s) => {
      g.set({ status: "pending" }, s.deliver.pending);
      g.set({ status: "error" }, s.deliver.error);
    },
  );
  gauge("hooklane_deliver_due", "Open dispatches due now that no lease holds (including held ones).", [], (g, s) =>
    g.set(s.deliver.due),
  );
  gauge("hooklane_deliver_in_flight", "Open dispatches leased by a worker: being attempted.", [], (g, s) =>
    g.set(s.deliver.inFlight),
  );
  gauge(
    "hooklane_deliver_held",
    "Open dispatches waiting on purpose, by reason: inactive_webhook (paused or disabled), open_breaker or awaiting_consent.",
    ["reason"],
    (g, s) => {
      g.set({ reason: "inactive_webhook" }, s.deliver.heldInactive);
      g.set({ reason: "open_breaker" }, s.deliver.heldBreaker);
      g.set({ reason: "awaiting_consent" }, s.deliver.heldConsent);
    },
  );
  gauge(
    "hooklane_lane_lag_seconds",
    "Age of the oldest due dispatch that should be moving (active webhook, breaker not open, no lease); 0 when none is due.",
    [],
    (g, s) => g.set(ageSeconds(s.at, s.deliver.oldestDueAt)),
  );
  gauge(
    "hooklane_route_backlog",
    "Route messages (outbox rows) by state: due, scheduled (a retry), in_flight.",
    ["state"],
    (g, s) => {
      g.set({ state: "due" }, s.route.due);
      g.set({ state: "scheduled" }, s.route.scheduled);
      g.set({ state: "in_flight" }, s.route.inFlight);
    },
  );
  gauge("hooklane_route_lag_seconds", "Age of the oldest due route message no lease holds; 0 when none.", [], (g, s) =>
    g.set(ageSeconds(s.at, s.route.oldestDueAt)),
  );
  gauge("hooklane_webhooks", "Webhooks by status.", ["status"], (g, s) => {
    g.set({ status: "active" }, s.webhooks.active);
    g.set({ status: "paused" }, s.webhooks.paused);
    g.set({ status: "disabled" }, s.webhooks.disabled);
  });
  gauge(
    "hooklane_breakers",
    "Webhooks whose circuit breaker is open (deliveries wait) or half_open (a probe may go); the rest are closed.",
    ["state"],
    (g, s) => {
      g.set({ state: "open" }, s.breakers.open);
      g.set({ state: "half_open" }, s.breakers.halfOpen);
    },
  );
  gauge(
    "hooklane_recovery_jobs",
    "Bulk recovery jobs not finished, by status: pending or running.",
    ["status"],
    (g, s) => {
      g.set({ status: "pending" }, s.recoveries.pending);
      g.set({ status: "running" }, s.recoveries.running);
    },
  );
  gauge("hooklane_poison_messages", "Messages kept in webhook_poison_message (never retried).", [], (g, s) =>
    g.set(s.poisonMessages),
  );
  gauge("hooklane_workers_live", "Lane workers whose heartbeat is younger than the lease.", [], (g, s) =>
    g.set(s.workers.live),
  );
  gauge(
    "hooklane_workers_in_flight",
    "Attempts in flight across live workers, as their heartbeats report.",
    [],
    (g, s) => g.set(s.workers.inFlight),
  );
}

function ageSeconds(now: Date, since: Date | null): number {
  return since === null ? 0 : Math.max(0, (now.getTime() - since.getTime()) / 1_000);
}
