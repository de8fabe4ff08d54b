import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { count, ms } from "../bench/format.ts";
import { markdownTable } from "../bench/report.ts";
import type { DrillResult } from "./run-drill.ts";

export interface DrillResults {
  runId: string;
  mode: "quick" | "full";
  startedAt: string;
  durationSeconds: number;
  drills: DrillResult[];
  errors: Record<string, string>;
}

/** One row per drill: the ledger's figures, drain time and latency around the faults. */
export function summaryTable(drills: readonly DrillResult[]): string {
  return markdownTable(
    [
      "drill",
      "acknowledged",
      "committed",
      "published",
      "expected",
      "delivered",
      "lost",
      "duplicates",
      "drain",
      "p50 before",
      "p50 after",
      "max latency",
      "stderr / warnings",
      "verdict",
    ],
    drills.map((r) => [
      r.label,
      count(r.ledger.acknowledged),
      count(r.ledger.committed),
      count(r.ledger.published),
      count(r.ledger.expected),
      count(r.ledger.delivered),
      count(r.ledger.lost + r.ledger.lostUnacknowledged),
      count(r.ledger.duplicates),
      ms(r.drainMs),
      ms(r.latency.before.p50),
      ms(r.latency.after.p50),
      ms(r.latency.all.max),
      `${r.logs.stderr} / ${r.logs.warnings}`,
      r.ok ? "pass" : "FAIL",
    ]),
  );
}

/** Every check of one drill, and its own figures. */
export function checkList(r: DrillResult): string {
  const lines = r.checks.map((c) => `- ${c.ok ? "✔" : c.timing ? "✘ (timing)" : "✘"} ${c.name}: ${c.value}`);
  const figures = Object.entries(r.figures).map(([k, v]) => `${k} ${v}`);
  const faults = r.faults.map((f) => `${f.what} ${f.from.toFixed(1)}–${f.to.toFixed(1)} s`);
  const failed = Object.entries(r.load.failed)
    .map(([k, v]) => `${k} × ${v}`)
    .join(", ");
  return [
    `${r.label} — ${r.title} (machine load average ${r.loadAverage.toFixed(1)} at the start)`,
    `  load: ${r.load.rate} req/s, ${r.load.concurrency} concurrent, ${count(r.load.sent)} sent, ${count(r.load.skipped)} skipped (all ${r.load.concurrency} busy); 2xx in p50 ${ms(r.load.answer.p50)}, p99 ${ms(r.load.answer.p99)}; not 2xx: ${failed || "none"}`,
    `  faults: ${faults.join("; ")}`,
    ...(figures.length ? [`  ${figures.join(", ")}`] : []),
    `  latency p50/p95/max — before ${ms(r.latency.before.p50)}/${ms(r.latency.before.p95)}/${ms(r.latency.before.max)}, during ${ms(r.latency.during.p50)}/${ms(r.latency.during.p95)}/${ms(r.latency.during.max)}, after ${ms(r.latency.after.p50)}/${ms(r.latency.after.p95)}/${ms(r.latency.after.max)}`,
    `  ledger: ${r.ledger.exhausted} exhausted, ${r.ledger.open} open, ${r.ledger.routeJobsLeft} route jobs left, ${r.ledger.poison} poison, ${r.ledger.misrouted} misrouted`,
    ...lines.map((l) => `  ${l}`),
  ].join("\n");
}

/** Writes results.json and report.md into `dir`; returns the terminal text. */
export function writeDrillReport(results: DrillResults, dir: string): string {
  const text = [
    summaryTable(results.drills),
    "",
    ...results.drills.map(checkList),
    ...Object.entries(results.errors).map(([name, error]) => `${name}: did not complete\n${error}`),
  ].join("\n\n");
  writeFileSync(join(dir, "results.json"), `${JSON.stringify(results, null, 2)}\n`);
  writeFileSync(
    join(dir, "report.md"),
    `# Fault drills ${results.runId} (${results.mode})\n\n${results.durationSeconds.toFixed(0)} s\n\n${text}\n`,
  );
  return text;
}
