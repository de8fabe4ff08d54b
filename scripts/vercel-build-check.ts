import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { DELIVER_TOPIC, ROUTE_TOPIC } from "../lib/webhook/outbound/webhook-out-queue-registrations.ts";

// Builds the deployment offline (`vercel build`) and checks the output, not the
// config: the lane must be its own function with its own maxDuration and queue
// triggers covering both topics, and the sweeper cron must be registered.
const VERCEL_CLI = "vercel@58.10.0";
const OUTPUT = ".vercel/output";
const LANE = `${OUTPUT}/functions/api/webhook-out.func/.vc-config.json`;
const API = `${OUTPUT}/functions/api/index.func/.vc-config.json`;
const SWEEPER_PATH = "/api/cron/webhook-sweeper";

if (!existsSync(".vercel/project.json")) {
  // `vercel build` needs a linked project; offline, a local stand-in is enough.
  mkdirSync(".vercel", { recursive: true });
  writeFileSync(".vercel/project.json", JSON.stringify({ projectId: "prj_local", orgId: "team_local", settings: {} }));
}
if (!process.argv.includes("--no-build")) {
  execFileSync("npx", ["-y", VERCEL_CLI, "build", "--yes"], { stdio: ["ignore", "inherit", "inherit"] });
}

interface FunctionConfig {
  maxDuration?: number;
  experimentalTriggers?: Array<{ type: string; topic: string }>;
}
const read = <T>(path: string): T => JSON.parse(readFileSync(path, "utf8")) as T;
const problems: string[] = [];
const lane = existsSync(LANE) ? read<FunctionConfig>(LANE) : undefined;
const api = existsSync(API) ? read<FunctionConfig>(API) : undefined;
if (!lane) problems.push(`${LANE} is missing: the lane is not its own function`);
if (!api) problems.push(`${API} is missing: the API function was not built`);
if (lane) {
  const topics = (lane.experimentalTriggers ?? []).filter((t) => t.type.startsWith("queue/")).map((t) => t.topic);
  const covers = (topic: string) =>
    topics.some((p) => p === topic || (p.endsWith("*") && topic.startsWith(p.slice(0, -1))));
  for (const topic of [ROUTE_TOPIC, DELIVER_TOPIC]) {
    if (!covers(topic)) problems.push(`the lane's experimentalTriggers (${topics.join(", ") || "none"}) miss ${topic}`);
  }
  if (!lane.maxDuration) problems.push("the lane has no maxDuration of its own");
  if (api && lane.maxDuration === api.maxDuration) problems.push("the lane's maxDuration is the API's, not its own");
}
const crons = read<{ crons?: Array<{ path: string }> }>(`${OUTPUT}/config.json`).crons ?? [];
if (!crons.some((cron) => cron.path === SWEEPER_PATH)) problems.push(`config.json has no cron for ${SWEEPER_PATH}`);

if (problems.length > 0) {
  for (const problem of problems) console.error(`[vercel:check] ${problem}`);
  process.exit(1);
}
console.log(
  `[vercel:check] lane function: triggers ${lane!.experimentalTriggers!.map((t) => t.topic).join(", ")}, maxDuration ${lane!.maxDuration} s; sweeper cron registered`,
);
