import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** One run of a measuring tool (the benchmark, the fault drills): its id, its results folder and its clock. */
export interface RunFolder {
  startedAt: Date;
  /** `20261202-203347`: the start, UTC, to the second. */
  runId: string;
  /** `<results>/<runId><suffix>/`, created. */
  resultsDir: string;
  /** `logs/` inside it, created: each product process writes its output there. */
  logDir: string;
  /** Seconds since the run started. */
  elapsedSeconds(): number;
  /** Prints one progress line, stamped with the seconds since the run started. */
  progress(message: string): void;
}

/** Starts a run whose results go under `results` (a folder URL), in a folder named by its start and `suffix`. */
export function startRunFolder(results: URL, suffix: string): RunFolder {
  const startedAt = new Date();
  const runId = startedAt.toISOString().replace(/[-:]/g, "").replace(/\..*/, "").replace("T", "-");
  const resultsDir = join(fileURLToPath(results), `${runId}${suffix}`) + "/";
  const logDir = join(resultsDir, "logs");
  mkdirSync(logDir, { recursive: true });
  const clock = performance.now();
  const elapsedSeconds = () => (performance.now() - clock) / 1_000;
  return {
    startedAt,
    runId,
    resultsDir,
    logDir,
    elapsedSeconds,
    progress: (message) => console.log(`  [${elapsedSeconds().toFixed(1).padStart(5)} s] ${message}`),
  };
}
