import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import {
  laneConcurrency,
  VERCEL_FUNCTIONS,
  vercelProjectConfig,
} from "../lib/webhook/transport/vercel/vercel-project.ts";
import { checkVercelOutput } from "./vercel-output-check.ts";

// `npm run vercel:check`: builds the deployment offline (`vercel build`, which runs vercel.ts with this environment)
// and checks the output, not the config (see checkVercelOutput): the lane's concurrency must be what this
// environment's WEBHOOK_ROUTE_MAX_CONCURRENCY and WEBHOOK_DELIVER_MAX_CONCURRENCY ask for. `--no-build` checks the
// last build.
const VERCEL_CLI = "vercel@58.10.0";
const OUTPUT = ".vercel/output";
const PUBLIC_DIR: string | undefined = vercelProjectConfig(process.env).outputDirectory;
const concurrency = laneConcurrency(process.env);

if (!existsSync(".vercel/project.json")) {
  // `vercel build` needs a linked project; offline, a local stand-in is enough.
  mkdirSync(".vercel", { recursive: true });
  writeFileSync(".vercel/project.json", JSON.stringify({ projectId: "prj_local", orgId: "team_local", settings: {} }));
}
if (!process.argv.includes("--no-build")) {
  execFileSync("npx", ["-y", VERCEL_CLI, "build", "--yes"], { stdio: ["ignore", "inherit", "inherit"] });
}

const problems = PUBLIC_DIR
  ? checkVercelOutput(OUTPUT, PUBLIC_DIR, concurrency)
  : ["vercel.ts names no outputDirectory: the whole repository would be served as static files"];
if (problems.length > 0) {
  for (const problem of problems) console.error(`[vercel:check] ${problem}`);
  process.exit(1);
}
const { route, deliver, sweeper } = VERCEL_FUNCTIONS;
console.log(
  `[vercel:check] static files: only ${PUBLIC_DIR}/; ${route.path}: ${route.topic}, maxDuration ` +
    `${route.maxDurationSeconds} s, maxConcurrency ${concurrency.route}; ${deliver.path}: ${deliver.topic}, ` +
    `maxDuration ${deliver.maxDurationSeconds} s, maxConcurrency ${concurrency.deliver}; sweeper maxDuration ` +
    `${sweeper.maxDurationSeconds} s, cron registered; every function on Node 24 with the migration journal and its bundle`,
);
