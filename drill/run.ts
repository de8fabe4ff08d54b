// `npm run drill [-- --quick] [--only <drills>]`: the fault drills of
// docs/reliability.md, each on its own throwaway PostgreSQL cluster with the
// API and lane workers as separate processes, a recording receiver and a
// load; the figures print as they come and land under drill/results/<run>/.
import { availableParallelism, loadavg } from "node:os";
import { startRunFolder } from "../bench/run-folder.ts";
import { checkList, summaryTable, writeDrillReport, type DrillResults } from "./drill-report.ts";
import { parseDrillOptions, type DrillName, type DrillOptions, type DrillSizes } from "./drill-options.ts";
import { apiKill } from "./faults/api-kill.ts";
import { pgRestart } from "./faults/pg-restart.ts";
import { pgStop } from "./faults/pg-stop.ts";
import { receiverDown } from "./faults/receiver-down.ts";
import { workerKill } from "./faults/worker-kill.ts";
import { workerTerm } from "./faults/worker-term.ts";
import { runDrill, type DrillPlan } from "./run-drill.ts";

const PLANS: Record<DrillName, (sizes: DrillSizes) => DrillPlan> = {
  "api-kill": apiKill,
  "worker-kill": workerKill,
  "pg-restart": pgRestart,
  "pg-stop": pgStop,
  "receiver-down": receiverDown,
  "worker-term": workerTerm,
};

let options: DrillOptions;
try {
  options = parseDrillOptions(process.argv.slice(2));
} catch (error) {
  console.error((error as Error).message);
  process.exit(2);
}

const { startedAt, runId, resultsDir, logDir, elapsedSeconds, progress } = startRunFolder(
  new URL("./results/", import.meta.url),
  options.quick ? "-quick" : "",
);

// The whole run is bounded: a wedged drill ends it rather than hanging CI.
const limitMs = options.quick ? 420_000 : 2_400_000;
const watchdog = setTimeout(() => {
  console.error(`drill: still running after ${limitMs / 1_000} s; giving up`);
  process.exit(3);
}, limitMs);
process.once("SIGINT", () => process.exit(130));

console.log(
  `hooklane fault drills (${options.quick ? "quick" : "full"}, ${options.workers} lane workers): ` +
    `${availableParallelism()} CPUs, ` +
    `load ${loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")}; results in ${resultsDir}`,
);
const results: DrillResults = {
  runId,
  mode: options.quick ? "quick" : "full",
  startedAt: startedAt.toISOString(),
  durationSeconds: NaN,
  drills: [],
  errors: {},
};
for (const name of options.drills) {
  const plan = PLANS[name](options.sizes);
  const runs = name === "api-kill" ? options.sizes.apiKill.runs : 1;
  for (let run = 1; run <= runs; run++) {
    console.log(`\n== ${plan.title}${runs > 1 ? ` (run ${run} of ${runs})` : ""}`);
    try {
      const result = await runDrill(plan, options, { run, runs, logDir, progress });
      results.drills.push(result);
      console.log(`${summaryTable([result])}\n\n${checkList(result)}`);
    } catch (error) {
      results.errors[`${name} #${run}`] = String((error as Error)?.stack ?? error);
      console.error(`drill: ${name} failed to run: ${results.errors[`${name} #${run}`]}`);
    }
  }
}
clearTimeout(watchdog);
results.durationSeconds = elapsedSeconds();
console.log(
  `\n${writeDrillReport(results, resultsDir)}\n\n${results.durationSeconds.toFixed(0)} s; written: ${resultsDir}`,
);
const failed = Object.keys(results.errors).length > 0 || results.drills.some((r) => !r.ok);
process.exit(failed ? 1 : 0);
