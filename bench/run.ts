// `npm run bench [-- --quick] [--profile] [--async-commit] [--only <scenarios>]`:
// the scenarios of docs/benchmarks.md against a throwaway database on a real
// PostgreSQL, with a table on the terminal and JSON, Markdown and SVG under
// bench/results/<run>/.
import { randomBytes } from "node:crypto";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { mintToken } from "../lib/auth/jwt.ts";
import type { BenchContext } from "./bench-context.ts";
import { createBenchDatabase, type BenchDatabase } from "./bench-database.ts";
import { BENCH_ACCOUNT } from "./bench-event-body.ts";
import { parseBenchOptions, type ScenarioName } from "./bench-options.ts";
import { summarizeCpuProfile } from "./cpuprofile-summary.ts";
import { describeMachine } from "./machine.ts";
import { incompleteScenarios, markdownTable, resultRows, writeReport, type BenchResults } from "./report.ts";
import { forkRpc, type RpcChild } from "./rpc.ts";
import { startRunFolder } from "./run-folder.ts";
import { backlogMemory } from "./scenarios/backlog-memory.ts";
import { dispatchThroughput } from "./scenarios/dispatch-throughput.ts";
import { endToEnd } from "./scenarios/end-to-end.ts";
import { fairness } from "./scenarios/fairness.ts";
import { fanOut } from "./scenarios/fan-out.ts";
import { publisherOverhead } from "./scenarios/publisher-overhead.ts";
import { scaleOut } from "./scenarios/scale-out.ts";
import type { SubscriberReady } from "./subscriber.ts";

const SCENARIO_RUNNERS: Record<ScenarioName, (context: BenchContext) => Promise<unknown>> = {
  publisher: publisherOverhead,
  "end-to-end": endToEnd,
  "fan-out": fanOut,
  throughput: dispatchThroughput,
  backlog: backlogMemory,
  fairness,
  "scale-out": scaleOut,
};

let options;
try {
  options = parseBenchOptions(process.argv.slice(2));
} catch (error) {
  console.error((error as Error).message);
  process.exit(2);
}

const { startedAt, runId, resultsDir, logDir, elapsedSeconds, progress } = startRunFolder(
  new URL("./results/", import.meta.url),
  `${options.quick ? "-quick" : ""}${options.profile ? "-profile" : ""}${options.asyncCommit ? "-async-commit" : ""}`,
);

// The whole run is bounded: a wedged scenario ends it rather than hanging CI.
const limitMs = options.quick ? 300_000 : 1_800_000;
const watchdog = setTimeout(() => {
  console.error(`bench: still running after ${limitMs / 1_000} s; giving up`);
  void cleanup().finally(() => process.exit(3));
}, limitMs);
process.once("SIGINT", () => void cleanup().finally(() => process.exit(130)));

let db: BenchDatabase | undefined;
const children: RpcChild<unknown>[] = [];
async function cleanup(): Promise<void> {
  await Promise.all(children.map((child) => child.stop()));
  children.length = 0;
  await db?.drop().catch((error) => console.error(`bench: could not drop the database: ${error}`));
  db = undefined;
}

const results: BenchResults = {
  runId,
  mode: options.quick ? "quick" : "full",
  asyncCommit: options.asyncCommit,
  commitLatencyMs: NaN,
  startedAt: startedAt.toISOString(),
  durationSeconds: NaN,
  machine: await describeMachine(options.adminUrl),
  sizes: options.sizes,
  scenarios: {},
  errors: {},
};
console.log(
  `hooklane bench (${results.mode}${options.profile ? ", profiling" : ""}): ${results.machine.cpus} × ${results.machine.cpuModel}, ` +
    `load ${results.machine.loadAverage.map((l) => l.toFixed(2)).join(" ")}; results in ${resultsDir}`,
);

try {
  const secretKey = randomBytes(32).toString("base64url");
  const jwtSecret = randomBytes(32).toString("base64url");
  db = await createBenchDatabase(options.adminUrl, secretKey, { asyncCommit: options.asyncCommit });
  results.commitLatencyMs = await db.commitLatencyMs();
  console.log(
    `one commit takes ${results.commitLatencyMs.toFixed(2)} ms here` +
      (options.asyncCommit
        ? " (this run: synchronous_commit = off on its database)"
        : " (durable: it waits for the WAL flush)"),
  );
  const subscriber = await forkRpc<SubscriberReady>("./subscriber.ts");
  children.push(subscriber);
  const loadGenerator = await forkRpc<unknown>("./load-generator.ts");
  children.push(loadGenerator);
  const context: BenchContext = {
    options,
    db,
    product: {
      databaseUrl: db.url,
      secretKey,
      jwtSecret,
      concurrency: options.sizes.concurrency,
      connections: options.sizes.connections,
      logDir,
      cpuProfile: options.profile,
    },
    subscriber,
    loadGenerator,
    token: await mintToken(jwtSecret, { sub: "bench", account: BENCH_ACCOUNT }),
    runId,
    progress,
  };
  for (const name of options.scenarios) {
    console.log(`\n== ${name}`);
    try {
      const result = await SCENARIO_RUNNERS[name](context);
      (results.scenarios as Record<string, unknown>)[name] = result;
      const rows = resultRows({ ...results, scenarios: { [name]: result } });
      console.log(markdownTable(["scenario", "figure", "compared"], rows));
    } catch (error) {
      results.errors[name] = describeError(error);
      console.error(`bench: ${name} failed: ${results.errors[name]}`);
    }
  }
} catch (error) {
  results.errors.setup = describeError(error);
  console.error(`bench: ${results.errors.setup}`);
} finally {
  await cleanup();
  clearTimeout(watchdog);
}

/** The error's stack and the messages of its causes (drizzle keeps PostgreSQL's own message in `cause`). */
function describeError(error: unknown): string {
  const lines = [String((error as Error)?.stack ?? error)];
  for (let cause = (error as Error)?.cause; cause; cause = (cause as Error).cause) {
    lines.push(`caused by: ${(cause as Error).message ?? cause}`);
  }
  return lines.join("\n");
}

if (options.profile) {
  results.profiles = Object.fromEntries(
    readdirSync(logDir)
      .filter((file) => file.endsWith(".cpuprofile"))
      .map((file) => [file.replace(/\.cpuprofile$/, ""), summarizeCpuProfile(join(logDir, file), 25)]),
  );
}
results.durationSeconds = elapsedSeconds();
const { table, files } = writeReport(results, resultsDir);
console.log(`\n${table}\n\nwritten: ${files.join(", ")}`);
const failed = Object.keys(results.errors).length > 0 || incompleteScenarios(results).length > 0;
process.exit(failed ? 1 : 0);
