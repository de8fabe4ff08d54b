import { readFileSync } from "node:fs";
import type { ProductProcess } from "../bench/product-processes.ts";

export interface LogFigures {
  /** Lines every product process wrote, stdout and stderr. */
  lines: number;
  /** Lines written to stderr. */
  stderr: number;
  /** Lines at warn level or above, and any line that is not the logger's JSON (a crash, a stray print). */
  warnings: number;
  /** What leaked, as "<process>: <what>"; empty when nothing did. */
  leaks: string[];
  /** Per process: lines, stderr lines, warnings. */
  byProcess: Record<string, { lines: number; stderr: number; warnings: number }>;
}

// drizzle's "Failed query: … params: …" message carries a statement's parameters.
const PARAMETER_DUMPS = [/\bparams:/, /Failed query/];
const WARN = 40;

/**
 * Reads every product process's log: how much it wrote (stderr, warnings)
 * and whether any line holds one of `secrets` or a query's parameters.
 */
export function scanLogs(
  processes: readonly ProductProcess[],
  secrets: ReadonlyArray<{ label: string; value: string }>,
): LogFigures {
  const figures: LogFigures = { lines: 0, stderr: 0, warnings: 0, leaks: [], byProcess: {} };
  for (const process of processes) {
    const lines = readFileSync(process.logFile, "utf8").split("\n").filter(Boolean);
    let warnings = 0;
    for (const line of lines) {
      if (levelOf(line) >= WARN) warnings++;
      for (const secret of secrets) {
        if (line.includes(secret.value)) figures.leaks.push(`${process.name}: ${secret.label}`);
      }
      if (PARAMETER_DUMPS.some((pattern) => pattern.test(line))) {
        figures.leaks.push(`${process.name}: a query's parameters`);
      }
    }
    const stderr = process.stderrLines();
    figures.byProcess[process.name] = { lines: lines.length, stderr, warnings };
    figures.lines += lines.length;
    figures.stderr += stderr;
    figures.warnings += warnings;
  }
  figures.leaks = [...new Set(figures.leaks)];
  return figures;
}

function levelOf(line: string): number {
  try {
    const level = (JSON.parse(line) as { level?: unknown }).level;
    return typeof level === "number" ? level : Infinity;
  } catch {
    return Infinity;
  }
}
