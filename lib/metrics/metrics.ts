import { collectDefaultMetrics, Counter, Gauge, Registry } from "prom-client";
import type { Database } from "../db/client.ts";
import { createLaneMetrics, type LaneMetrics } from "./lane-metrics.ts";

/** One process's metrics, in Prometheus text format. */
export interface Metrics {
  /** The registry this process's instruments live in (the ledger gauges join it in the API). */
  readonly registry: Registry;
  readonly lane: LaneMetrics;
  /** The exposition: the process's runtime metrics, then this registry's. */
  render(): Promise<{ contentType: string; body: string }>;
}

let runtime: Registry | undefined;

/** Node's own metrics (CPU, memory, event loop, GC), once per process however many services it builds. */
function runtimeRegistry(): Registry {
  if (!runtime) {
    runtime = new Registry();
    collectDefaultMetrics({ register: runtime });
  }
  return runtime;
}

/**
 * The metrics of one set of services: the lane's instruments, the
 * publisher's counts, and this process's database connection (outage
 * tracker, LISTEN session), all read when scraped. What the ledger holds is
 * added by `exposeLedgerMetrics`, in the API only.
 */
export function createMetrics(parts: {
  database: Database;
  publisherStats: { readonly published: number; readonly unsubscribed: number; readonly failed: number };
}): Metrics {
  const registry = new Registry();
  const registers = [registry];
  const { database, publisherStats } = parts;

  new Counter({
    name: "hooklane_publish_total",
    help: "Mutations answered 2xx by this API process, by result: published (a route message committed with the mutation), unsubscribed (nobody listens to its event), failed (the message could not be written; the request failed).",
    labelNames: ["result"],
    registers,
    collect() {
      this.reset();
      this.inc({ result: "published" }, publisherStats.published);
      this.inc({ result: "unsubscribed" }, publisherStats.unsubscribed);
      this.inc({ result: "failed" }, publisherStats.failed);
    },
  });
  new Gauge({
    name: "hooklane_database_up",
    help: "1 while this process reaches the database, 0 during an outage it noticed.",
    registers,
    collect() {
      this.set(database.outage.down ? 0 : 1);
    },
  });
  new Gauge({
    name: "hooklane_listener_up",
    help: "1 while this process's LISTEN session (the lane's wake-ups) is connected, or it listens to nothing; 0 while it reconnects.",
    registers,
    collect() {
      const health = database.listenerHealth;
      this.set(health.up || health.channels.length === 0 ? 1 : 0);
    },
  });
  new Counter({
    name: "hooklane_listener_reconnects_total",
    help: "Times this process's LISTEN session was re-established after being lost.",
    registers,
    collect() {
      this.reset();
      this.inc(database.listenerHealth.reconnects);
    },
  });

  return {
    registry,
    lane: createLaneMetrics(registry),
    async render() {
      const merged = Registry.merge([runtimeRegistry(), registry]);
      return { contentType: merged.contentType, body: await merged.metrics() };
    },
  };
}
