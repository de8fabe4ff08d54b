import { count, mb, ms, percent, ratio } from "./format.ts";
import type { BenchResults } from "./report.ts";
import { median } from "./stats.ts";

export interface TargetVerdict {
  /** SPEC's wording, shortened. */
  target: string;
  figure: string;
  /** undefined: not measured in this run (scenario skipped, failed, or too small in --quick). */
  met: boolean | undefined;
}

const FAN_OUT_TARGET_WEBHOOKS = 10_000;
const BACKLOG_TARGET_DISPATCHES = 100_000;
const MB = 1_048_576;
/** Light load, 2xx → receipt: the p50 and p99 targets. */
const LIGHT_P50_MS = 8;
const LIGHT_P99_MS = 25;
/** End to end through the API, as a share of the API's own throughput with the flag off, in the same run (SPEC). */
const END_TO_END_SHARE = 0.6;
/** The lane as a share of the raw loopback POST ceiling: SPEC's target, and the goal beyond it. */
const CEILING_SHARE = 0.35;
const CEILING_GOAL = 0.5;
/** The lane over the same pipeline on each peer (SPEC). */
const PEER_RATIO = 1.5;
/** Four lane workers over one (deliveries per second), and the share of active sessions left waiting on a lock. */
const SCALE_OUT_RATIO = 0.95;
const SCALE_OUT_LOCK_WAIT_SHARE = 0.05;

/** SPEC's "Targets", each judged from this run's figures. */
export function evaluateTargets(results: BenchResults): TargetVerdict[] {
  const { publisher, throughput, backlog, fairness } = results.scenarios;
  const e2e = results.scenarios["end-to-end"];
  const fan = results.scenarios["fan-out"];
  const scale = results.scenarios["scale-out"];
  const lane = throughput?.contestants.hooklane.median ?? NaN;
  const fourWorkersLockWaits = scale ? scale.fourWorkers.activity.lockWaiting / scale.fourWorkers.activity.active : NaN;
  // The API alone, flag off, measured in this run: what the end-to-end figure is a share of.
  const apiAlone = publisher?.variants.find((variant) => variant.key === "off")?.median;
  const endToEndRatio = (e2e?.loaded.sustainedDeliveriesPerSecond ?? NaN) / (apiAlone ?? NaN);
  const versus = (peer: "pg-boss" | "bullmq"): TargetVerdict => {
    const other = throughput?.contestants[peer];
    return {
      target: `≥ ${PEER_RATIO}× the same pipeline on ${peer === "pg-boss" ? "pg-boss" : "BullMQ"}`,
      figure: other?.skipped
        ? `skipped: ${other.skipped}`
        : `${count(lane)} vs ${count(other?.median ?? NaN)} deliveries/s (${ratio(lane / (other?.median ?? NaN))})`,
      met: judge(lane / (other?.median ?? NaN), (r) => r >= PEER_RATIO),
    };
  };
  return [
    {
      target: "publisher: API throughput with the flag on (nobody subscribed) ≥ 98 % of flag off",
      figure: publisher
        ? `${percent(publisher.ratioNone)} (by CPU per request: ${percent(publisher.cpuRatioNone)}; ` +
          `with a subscriber: ${percent(publisher.ratioSubscribed)})`
        : "—",
      met: judge(publisher?.ratioNone ?? NaN, (r) => r >= 0.98),
    },
    {
      target: "publisher: API throughput with the flag on and a subscriber ≥ 90 % of flag off",
      figure: publisher
        ? `${percent(publisher.ratioSubscribed)} (${count(publisher.variants.find((v) => v.key === "subscribed")!.cpuUsPerRequest)} ` +
          `against ${count(publisher.variants.find((v) => v.key === "off")!.cpuUsPerRequest)} µs CPU/request)`
        : "—",
      met: judge(publisher?.ratioSubscribed ?? NaN, (r) => r >= 0.9),
    },
    {
      target: "the API as fast as hand-written code: flag off ≥ 0.95× the peer's req/s, CPU/request ≤ 1.1× the peer's",
      figure: publisher
        ? `${ratio(publisher.ratioPeer)} of its req/s, ${ratio(publisher.cpuRatioPeer)} of its CPU/request ` +
          `(${count(publisher.variants.find((v) => v.key === "off")!.cpuUsPerRequest)} against ` +
          `${count(publisher.variants.find((v) => v.key === "peer")!.cpuUsPerRequest)} µs)`
        : "—",
      met:
        publisher && Number.isFinite(publisher.ratioPeer) && Number.isFinite(publisher.cpuRatioPeer)
          ? publisher.ratioPeer >= 0.95 && publisher.cpuRatioPeer <= 1.1
          : undefined,
    },
    {
      target: "≥ 3,000 deliveries/s sustained: the lane (N dispatches → N deliveries, as compared below)",
      figure: throughput
        ? `${count(lane)} deliveries/s (median of ${throughput.contestants.hooklane.rounds.length} rounds` +
          `${backlog ? `; a ${count(backlog.dispatches)} backlog drained at ${count(backlog.deliveriesPerSecond)}/s` : ""})`
        : "—",
      met: judge(lane, (r) => r >= 3_000),
    },
    {
      target: `end to end through the API (fan-out 1) ≥ ${END_TO_END_SHARE}× of the API's own req/s (scenario 1, flag off)`,
      figure: e2e
        ? `${count(e2e.loaded.sustainedDeliveriesPerSecond)} deliveries/s` +
          (apiAlone ? ` against ${count(apiAlone)} req/s (${ratio(endToEndRatio)})` : " (scenario 1 did not run)") +
          `; the API answered ${count(e2e.loaded.apiRequestsPerSecond)} req/s beside the lane`
        : "—",
      met: judge(endToEndRatio, (r) => r >= END_TO_END_SHARE),
    },
    {
      target: `p50 from the API's 2xx to the subscriber ≤ ${LIGHT_P50_MS} ms at light load`,
      figure: e2e ? `p50 ${ms(e2e.light.latency.p50)}` : "—",
      met: judge(e2e?.light.latency.p50 ?? NaN, (p) => p <= LIGHT_P50_MS),
    },
    {
      target: `p99 from the API's 2xx to the subscriber ≤ ${LIGHT_P99_MS} ms at light load`,
      figure: e2e ? `p99 ${ms(e2e.light.latency.p99)} (p95 ${ms(e2e.light.latency.p95)})` : "—",
      met: judge(e2e?.light.latency.p99 ?? NaN, (p) => p <= LIGHT_P99_MS),
    },
    {
      target: `≥ ${CEILING_SHARE * 100} % of the raw loopback POST ceiling (goal ${CEILING_GOAL * 100} %)`,
      figure: throughput
        ? `${percent(lane / throughput.contestants.ceiling.median)} (${count(lane)} of ${count(throughput.contestants.ceiling.median)}/s)`
        : "—",
      met: judge(lane / (throughput?.contestants.ceiling.median ?? NaN), (r) => r >= CEILING_SHARE),
    },
    versus("pg-boss"),
    versus("bullmq"),
    {
      target: "fan-out: one event to 10,000 webhooks routed in ≤ 1 s",
      figure: fan ? `${ms(fan.routeMs)} for ${count(fan.webhooks)} webhooks` : "—",
      met: fan && fan.webhooks >= FAN_OUT_TARGET_WEBHOOKS ? judge(fan.routeMs, (t) => t <= 1_000) : undefined,
    },
    {
      target: "footprint: an idle lane worker ≤ 120 MB RSS",
      figure: backlog ? mb(backlog.idleRssBytes) : "—",
      met: judge(backlog?.idleRssBytes ?? NaN, (rss) => rss <= 120 * MB),
    },
    {
      target: "footprint: ≤ 200 MB RSS draining 100,000 dispatches",
      figure: backlog
        ? `${mb(backlog.peakRssBytes)} draining ${count(backlog.dispatches)} (VmHWM ${mb(backlog.highWaterBytes)})`
        : "—",
      met:
        backlog && backlog.dispatches >= BACKLOG_TARGET_DISPATCHES
          ? judge(backlog.peakRssBytes, (rss) => rss <= 200 * MB)
          : undefined,
    },
    {
      target: "start-up: a lane worker's spawn to its first claim ≤ 1 s",
      figure: backlog
        ? `${ms(median(backlog.startup.bundleMs))} (median of ${backlog.startup.bundleMs.length}; ` +
          `from source ${ms(median(backlog.startup.sourceMs))})`
        : "—",
      met: judge(median(backlog?.startup.bundleMs ?? []), (t) => t <= 1_000),
    },
    {
      target: "isolation: a healthy webhook's p95 within 2× while a slow one shares its origin",
      figure: fairness
        ? `same origin ${ratio(fairness.sameOrigin.p95Ratio)}, another origin ${ratio(fairness.otherOrigin.p95Ratio)} ` +
          `(beside ${count(fairness.slowWebhooks)} webhook${fairness.slowWebhooks === 1 ? "" : "s"} answering in ${ms(fairness.slowMs)})`
        : "—",
      met: judge(Math.max(fairness?.sameOrigin.p95Ratio ?? NaN, fairness?.otherOrigin.p95Ratio ?? NaN), (r) => r <= 2),
    },
    {
      target: `scale-out: 4 lane workers ≥ ${SCALE_OUT_RATIO}× the throughput of 1`,
      figure: scale
        ? `${ratio(scale.ratio)} (median of ${scale.ratios.map((r) => ratio(r)).join(" · ")}; ` +
          `${count(scale.fourWorkers.median)} against ${count(scale.oneWorker.median)} deliveries/s, ${results.machine.cpus} cores)`
        : "—",
      met: judge(scale?.ratio ?? NaN, (r) => r >= SCALE_OUT_RATIO),
    },
    {
      target: `scale-out: ≤ ${SCALE_OUT_LOCK_WAIT_SHARE * 100} % of the database's active sessions waiting on a lock with 4 workers`,
      figure: scale
        ? `${percent(fourWorkersLockWaits)} of ${count(scale.fourWorkers.activity.active)} active session-samples ` +
          `(1 worker: ${percent(scale.oneWorker.activity.lockWaiting / scale.oneWorker.activity.active)})`
        : "—",
      met: judge(fourWorkersLockWaits, (share) => share <= SCALE_OUT_LOCK_WAIT_SHARE),
    },
  ];
}

function judge(value: number, rule: (value: number) => boolean): boolean | undefined {
  return Number.isFinite(value) ? rule(value) : undefined;
}
