import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { topEntries } from "./activity-sampler.ts";
import type { BenchSizes } from "./bench-options.ts";
import { formatProfileSummary, type ProfileSummary } from "./cpuprofile-summary.ts";
import { count, mb, ms, percent, ratio } from "./format.ts";
import type { Machine } from "./machine.ts";
import type { BacklogResult } from "./scenarios/backlog-memory.ts";
import type { ContestantResult, ThroughputResult } from "./scenarios/dispatch-throughput.ts";
import type { EndToEndResult } from "./scenarios/end-to-end.ts";
import type { FairnessResult, HealthyWebhook } from "./scenarios/fairness.ts";
import type { FanOutResult } from "./scenarios/fan-out.ts";
import type { PublisherResult } from "./scenarios/publisher-overhead.ts";
import type { ScaleOutConfiguration, ScaleOutResult } from "./scenarios/scale-out.ts";
import { median } from "./stats.ts";
import { barChartSvg, type Bar } from "./svg-bar-chart.ts";
import { evaluateTargets } from "./targets.ts";

export interface BenchResults {
  runId: string;
  mode: "quick" | "full";
  /** The run's database had `synchronous_commit = off`. */
  asyncCommit: boolean;
  /** The median one-row autocommit INSERT on the run's database. */
  commitLatencyMs: number;
  startedAt: string;
  durationSeconds: number;
  machine: Machine;
  sizes: BenchSizes;
  scenarios: {
    publisher?: PublisherResult;
    "end-to-end"?: EndToEndResult;
    "fan-out"?: FanOutResult;
    throughput?: ThroughputResult;
    backlog?: BacklogResult;
    fairness?: FairnessResult;
    "scale-out"?: ScaleOutResult;
  };
  /** Scenario name (or `setup`) → what went wrong. */
  errors: Record<string, string>;
  profiles?: Record<string, ProfileSummary>;
}

/** Scenarios whose deliveries did not all arrive and get recorded before their deadline. */
export function incompleteScenarios(results: BenchResults): string[] {
  const { throughput, backlog, fairness } = results.scenarios;
  const e2e = results.scenarios["end-to-end"];
  const fan = results.scenarios["fan-out"];
  const scale = results.scenarios["scale-out"];
  return [
    ...(e2e && (e2e.light.arrived < e2e.light.events || e2e.loaded.arrived < e2e.loaded.events) ? ["end-to-end"] : []),
    ...(fan && !fan.complete ? ["fan-out"] : []),
    ...(throughput && [...Object.values(throughput.contestants), throughput.oneWebhook].some((c) => c.incomplete)
      ? ["throughput"]
      : []),
    ...(backlog && !backlog.complete ? ["backlog"] : []),
    ...(fairness && !fairness.complete ? ["fairness"] : []),
    ...(scale && !scale.complete ? ["scale-out"] : []),
  ];
}

type Row = [string, string, string];

/** The run's figures, one row each: what, how much, compared with what. */
export function resultRows(results: BenchResults): Row[] {
  const { publisher, throughput, backlog, fairness } = results.scenarios;
  const e2e = results.scenarios["end-to-end"];
  const fan = results.scenarios["fan-out"];
  const scale = results.scenarios["scale-out"];
  const { sizes } = results;
  const rows: Row[] = [];
  for (const variant of publisher?.variants ?? []) {
    const compared = {
      off: `baseline; ${ratio(publisher!.ratioPeer)} of the peer (CPU/request ${ratio(publisher!.cpuRatioPeer)})`,
      none: `${ratio(publisher!.ratioNone)} of flag off`,
      subscribed: `${ratio(publisher!.ratioSubscribed)} of flag off`,
      peer: `flag off ${ratio(publisher!.ratioPeer)} of it`,
    }[variant.key];
    rows.push([
      `1 publisher: ${variant.key === "peer" ? "" : "API "}req/s, ${variant.label}`,
      `${count(variant.median)} req/s (p99 ${ms(variant.p99Ms)}), ${count(variant.cpuUsPerRequest)} µs CPU/request`,
      compared,
    ]);
  }
  if (e2e) {
    const light = e2e.light.latency;
    const loaded = e2e.loaded.latency;
    rows.push(
      [
        `2 end to end, light load (1 connection, ${sizes.endToEnd.lightRate} req/s, ${count(e2e.light.events)} events)`,
        `p50 ${ms(light.p50)} · p95 ${ms(light.p95)} · p99 ${ms(light.p99)}`,
        "2xx → subscriber",
      ],
      [
        `2 end to end, loaded (${sizes.endToEnd.connections} connections, ${count(e2e.loaded.events)} events)`,
        `${count(e2e.loaded.sustainedDeliveriesPerSecond)} deliveries/s sustained`,
        `API ${count(e2e.loaded.apiRequestsPerSecond)} req/s; overall ${count(e2e.loaded.overallDeliveriesPerSecond)}/s`,
      ],
      [
        "2 end to end, loaded: latency",
        `p50 ${ms(loaded.p50)} · p95 ${ms(loaded.p95)} · p99 ${ms(loaded.p99)}`,
        "2xx → subscriber",
      ],
    );
  }
  if (fan) {
    rows.push([
      `3 fan-out: one event to ${count(fan.webhooks)} webhooks`,
      `routed in ${ms(fan.routeMs)}`,
      `last POST at ${ms(fan.lastArrivalMs)}, all recorded at ${ms(fan.allRecordedMs)}`,
    ]);
  }
  if (throughput) {
    const { ceiling, hooklane, "pg-boss": pgBoss, bullmq } = throughput.contestants;
    const label = `${count(throughput.deliveries)} deliveries, ${sizes.concurrency} in flight, ${sizes.connections} sockets`;
    rows.push(
      [`4 ceiling: raw keep-alive POSTs (${label})`, `${count(ceiling.median)} /s`, "1.000× (the limit)"],
      [
        `5 hooklane lane: N dispatches over ${throughput.webhooks} webhooks → N deliveries`,
        `${count(hooklane.median)} /s, ${transactions(hooklane)}, ${workerCpu(hooklane)}`,
        `${percent(hooklane.median / ceiling.median)} of ceiling`,
      ],
      [
        `5 hooklane lane: N dispatches of one webhook (its in-flight cap binds)`,
        `${count(throughput.oneWebhook.median)} /s, ${workerCpu(throughput.oneWebhook)}`,
        `${ratio(throughput.oneWebhook.median / hooklane.median)} of the lane over ${throughput.webhooks}`,
      ],
      ...(throughput.quiet
        ? [
            [
              `5 hooklane lane, metrics off`,
              `${count(throughput.quiet.median)} /s, ${workerCpu(throughput.quiet)}`,
              `metrics: ${signedPercent(median(hooklane.workerCpuUsPerDelivery ?? []) / median(throughput.quiet.workerCpuUsPerDelivery ?? []) - 1)} worker CPU per delivery`,
            ] as Row,
          ]
        : []),
      [
        `5 peer: pg-boss`,
        `${count(pgBoss.median)} /s, ${transactions(pgBoss)}`,
        `hooklane ${ratio(hooklane.median / pgBoss.median)}`,
      ],
      [
        `5 peer: BullMQ (Redis)`,
        bullmq.skipped ? `skipped: ${bullmq.skipped}` : `${count(bullmq.median)} /s, ${transactions(bullmq)}`,
        bullmq.skipped ? "—" : `hooklane ${ratio(hooklane.median / bullmq.median)}`,
      ],
    );
  }
  if (backlog) {
    const { startup } = backlog;
    rows.push([
      `6 start-up: spawn → lane started (median of ${startup.bundleMs.length})`,
      `${ms(median(startup.bundleMs))} (${startup.bundleMs.map((t) => ms(t)).join(" · ")}), idle RSS ${mb(median(startup.bundleIdleRssBytes))}`,
      `from source: ${ms(median(startup.sourceMs))}, idle RSS ${mb(median(startup.sourceIdleRssBytes))}`,
    ]);
    rows.push([
      `6 backlog: one worker, ${count(backlog.dispatches)} dispatches`,
      `RSS idle ${mb(backlog.idleRssBytes)}, peak ${mb(backlog.peakRssBytes)} (VmHWM ${mb(backlog.highWaterBytes)})`,
      `drained at ${count(backlog.deliveriesPerSecond)} /s, ${count(backlog.cpuUsPerDelivery)} µs worker CPU/delivery`,
    ]);
  }
  if (fairness) {
    const beside =
      `beside ${count(fairness.slowWebhooks)} webhook${fairness.slowWebhooks === 1 ? "" : "s"} answering in ${ms(fairness.slowMs)}` +
      ` (${count(fairness.slowBacklog)} queued)`;
    const healthy = (where: string, webhook: HealthyWebhook): Row => [
      `7 fairness: healthy webhook, ${where} (${count(fairness.events)} events)`,
      `p95 ${ms(webhook.besideSlow.p95)} ${beside}, ${ms(webhook.alone.p95)} alone`,
      `${ratio(webhook.p95Ratio)} of its p95 alone`,
    ];
    rows.push(
      healthy("same origin as the slow ones", fairness.sameOrigin),
      healthy("another origin", fairness.otherOrigin),
    );
  }
  if (scale) {
    const backlog = `${count(scale.events)} events × ${scale.origins} webhooks, ${scale.accounts} accounts × ${scale.origins} origins`;
    const configuration = (c: ScaleOutConfiguration, compared: string): Row => [
      `8 scale-out: ${c.workers} lane worker${c.workers === 1 ? "" : "s"} (${backlog})`,
      `${count(c.median)} /s; CPU/delivery: workers ${count(median(c.workerCpuUs))} µs, ` +
        `PostgreSQL ${count(median(c.postgresCpuUs))} µs (its lane sessions ${count(median(c.sessionCpuUs))} µs), ` +
        `subscriber ${count(median(c.subscriberCpuUs))} µs; ${median(c.transactionsPerDelivery).toFixed(2)} transactions/delivery`,
      compared,
    ];
    const waits = (c: ScaleOutConfiguration): Row[] => [
      [
        `8 scale-out: ${c.workers} worker${c.workers === 1 ? "" : "s"}, pg_stat_activity every 25 ms`,
        `${percent(c.activity.lockWaiting / c.activity.active)} of active sessions waiting on a lock ` +
          `(rounds: ${c.lockWaitShares.map((share) => percent(share)).join(" · ")}; ${count(c.activity.samples)} samples, ` +
          `${(c.activity.active / c.activity.samples).toFixed(1)} active on average)`,
        `top: ${topEntries(c.activity.waitEvents, 4)
          .map(([event, n]) => `${event} ${percent(n / c.activity.active)}`)
          .join(", ")}`,
      ],
      ...topEntries(c.activity.lockWaits, 3).map(([wait, n]): Row => [
        `8 scale-out: ${c.workers} worker${c.workers === 1 ? "" : "s"}, a lock wait (blocked ← blocker)`,
        wait,
        `${percent(n / c.activity.lockWaiting)} of the lock waits`,
      ]),
    ];
    rows.push(
      configuration(scale.oneWorker, `median of ${scale.oneWorker.rounds.length} rounds`),
      ...waits(scale.oneWorker),
      configuration(
        scale.fourWorkers,
        `${ratio(scale.ratio)} of 1 worker (median of ${scale.ratios.map((r) => ratio(r)).join(" · ")})`,
      ),
      ...waits(scale.fourWorkers),
      ...(scale.perCore
        ? [
            configuration(
              scale.perCore.configuration,
              `${ratio(scale.perCore.ratio)} of 1 worker, a worker a core (median of ${scale.perCore.ratios.map((r) => ratio(r)).join(" · ")})`,
            ),
            ...waits(scale.perCore.configuration),
          ]
        : []),
      ...scale.projection.map((projection): Row => [
        `8 scale-out, projected (not measured): P from ${projection.basis}`,
        projection.machines
          .map(
            (m) =>
              `${m.cores} cores: ${m.workers} workers + ${m.postgresCores} for PostgreSQL → ${count(m.deliveriesPerSecond)} /s (bound by ${m.boundBy})`,
          )
          .join("; "),
        `min(workers / W, PostgreSQL's cores / P), a core per worker, W ${count(projection.workerCpuUs)} µs and ` +
          `P ${count(projection.postgresCpuUs)} µs per delivery as with 4 workers here; nothing else binding`,
      ]),
    );
  }
  return rows;
}

function workerCpu(result: ContestantResult): string {
  return `${median(result.workerCpuUsPerDelivery ?? []).toFixed(0)} µs worker CPU/delivery`;
}

function signedPercent(fraction: number): string {
  return `${fraction >= 0 ? "+" : ""}${(fraction * 100).toFixed(1)} %`;
}

function transactions(result: ContestantResult): string {
  return `${median(result.transactionsPerDelivery).toFixed(2)} transactions/delivery`;
}

/** A Markdown table with padded columns, readable on a terminal too. */
export function markdownTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => (row[i] ?? "").length)));
  const line = (cells: readonly string[]) => `| ${cells.map((cell, i) => cell.padEnd(widths[i]!)).join(" | ")} |`;
  return [line(header), `|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`, ...rows.map(line)].join("\n");
}

/** A smoke run's sizes are too small for a steady state, so its figures are shown but not judged. */
function verdict(met: boolean | undefined, mode: BenchResults["mode"]): string {
  if (mode === "quick") return "not judged (--quick)";
  return met === undefined ? "not measured" : met ? "met" : "NOT MET";
}

function charts(results: BenchResults): Record<string, string> {
  const out: Record<string, string> = {};
  const { publisher, throughput } = results.scenarios;
  const e2e = results.scenarios["end-to-end"];
  if (throughput) {
    const { ceiling, hooklane, "pg-boss": pgBoss, bullmq } = throughput.contestants;
    const bars: Bar[] = [
      { label: "ceiling (no database)", value: ceiling.median },
      { label: "hooklane lane", value: hooklane.median, accent: true, note: percent(hooklane.median / ceiling.median) },
      ...(e2e
        ? [{ label: "hooklane end to end (API)", value: e2e.loaded.sustainedDeliveriesPerSecond, accent: true }]
        : []),
      { label: "pg-boss", value: pgBoss.median },
      { label: bullmq.skipped ? "BullMQ (skipped)" : "BullMQ", value: bullmq.median },
    ];
    out["throughput.svg"] = barChartSvg(
      `Deliveries per second (${count(throughput.deliveries)} deliveries)`,
      "/s",
      bars,
    );
  }
  if (publisher) {
    const paired = {
      off: 1,
      none: publisher.ratioNone,
      subscribed: publisher.ratioSubscribed,
      peer: 1 / publisher.ratioPeer,
    };
    out["publisher.svg"] = barChartSvg(
      "API POST /v3/payment-debts, requests per second",
      "req/s",
      publisher.variants.map((v) => ({
        label: v.label,
        value: v.median,
        accent: v.key !== "off" && v.key !== "peer",
        note: ratio(paired[v.key]),
      })),
    );
  }
  return out;
}

/**
 * Writes results.json, report.md and the SVG charts into `dir`; returns the
 * terminal table (figures and targets) and the files written.
 */
export function writeReport(results: BenchResults, dir: string): { table: string; files: string[] } {
  const figures = markdownTable(["scenario", "figure", "compared"], resultRows(results));
  const targets = markdownTable(
    ["SPEC target", "this run", "verdict"],
    evaluateTargets(results).map((t) => [t.target, t.figure, verdict(t.met, results.mode)]),
  );
  const incomplete = incompleteScenarios(results);
  const problems = [
    ...Object.entries(results.errors).map(([name, error]) => `- **${name} failed**: \`${error.split("\n")[0]}\``),
    ...incomplete.map((name) => `- **${name}**: not every delivery was recorded before the deadline`),
  ];
  const svgs = charts(results);
  const { machine } = results;
  const markdown = [
    `# hooklane benchmark ${results.runId} (${results.mode})`,
    "",
    `${machine.cpus} × ${machine.cpuModel}, ${mb(machine.memoryBytes)} memory, Linux ${machine.kernel}, Node ${machine.node}, ` +
      `${machine.postgres}; load average at start ${machine.loadAverage.map((l) => l.toFixed(2)).join(" ")}. ` +
      `One commit: ${ms(results.commitLatencyMs)}${results.asyncCommit ? " (synchronous_commit = off)" : " (durable: waits for the WAL flush)"}. ` +
      `Ran ${results.durationSeconds.toFixed(0)} s.`,
    "",
    figures,
    "",
    targets,
    ...(problems.length ? ["", ...problems] : []),
    ...Object.keys(svgs).map((file) => `\n![${file}](${file})`),
    ...Object.values(results.profiles ?? {}).flatMap((summary) => ["", formatProfileSummary(summary)]),
    "",
  ].join("\n");
  const files = ["results.json", "report.md", ...Object.keys(svgs)];
  writeFileSync(join(dir, "results.json"), `${JSON.stringify(results, null, 2)}\n`);
  writeFileSync(join(dir, "report.md"), markdown);
  for (const [file, svg] of Object.entries(svgs)) writeFileSync(join(dir, file), svg);
  return {
    table: [figures, "", targets, ...(problems.length ? ["", ...problems] : [])].join("\n"),
    files: files.map((file) => join(dir, file)),
  };
}
