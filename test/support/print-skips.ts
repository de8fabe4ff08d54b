import { OPTIONAL_TOOLS } from "./optional-tools.ts";

/**
 * Vitest's global setup: before any suite runs, one line for each group of
 * tests this machine cannot run and why, so a skip is never silent; under
 * `CI=true` a missing tool fails the run instead.
 */
export default function printSkips(): void {
  const missing = Object.entries(OPTIONAL_TOOLS).filter(([, tool]) => !tool.present);
  // CI installs every tool (.ci/run): there, a missing one is a broken run, not a skip.
  if (process.env.CI === "true" && missing.length > 0) {
    throw new Error(`CI must run every suite, but this machine lacks ${missing.map(([name]) => name).join(", ")}`);
  }
  const lines = missing.map(
    ([name, tool]) => `[skip] ${tool.skips}: no ${name} on this machine (${tool.install}; CI installs it)`,
  );
  if (!process.env.TEST_DATABASE_URL) {
    lines.push(
      "[skip] the integration suites (test/integration): TEST_DATABASE_URL is not set (CI points it at PostgreSQL)",
    );
  }
  for (const line of lines) console.log(line);
}
