import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { VERCEL_FUNCTIONS } from "../lib/webhook/transport/vercel/vercel-queue-limits.ts";
import { checkVercelOutput } from "./vercel-output-check.ts";

// `npm run vercel:check`: builds the deployment offline (`vercel build`) and checks the output, not the config
// (see checkVercelOutput). `--no-build` checks the last build.
const VERCEL_CLI = "vercel@58.10.0";
const OUTPUT = ".vercel/output";
const PUBLIC_DIR = (JSON.parse(readFileSync("vercel.json", "utf8")) as { outputDirectory?: string }).outputDirectory;

if (!existsSync(".vercel/project.json")) {
  // `vercel build` needs a linked project; offline, a local stand-in is enough.
  mkdirSync(".vercel", { recursive: true });
  writeFileSync(".vercel/project.json", JSON.stringify({ projectId: "prj_local", orgId: "team_local", settings: {} }));
}
if (!process.argv.includes("--no-build")) {
  execFileSync("npx", ["-y", VERCEL_CLI, "build", "--yes"], { stdio: ["ignore", "inherit", "inherit"] });
}

const problems = PUBLIC_DIR
  ? checkVercelOutput(OUTPUT, PUBLIC_DIR)
  : ["vercel.json names no outputDirectory: the whole repository would be served as static files"];
if (problems.length > 0) {
  for (const problem of problems) console.error(`[vercel:check] ${problem}`);
  process.exit(1);
}
const { lane, sweeper } = VERCEL_FUNCTIONS;
console.log(
  `[vercel:check] static files: only ${PUBLIC_DIR}/; lane function: one queue trigger for both topics, ` +
    `maxDuration ${lane.maxDurationSeconds} s, maxConcurrency ${lane.maxConcurrency}; sweeper maxDuration ` +
    `${sweeper.maxDurationSeconds} s, cron registered; every function on Node 24 with the migration journal and its bundle`,
);
