import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ConfigError, config } from "../lib/config/env.ts";
import { vercelLaneTimings } from "../lib/webhook/transport/vercel/vercel-queue-limits.ts";

/** Where a build notes that its deployment's database was migrated: a build runs vercel-build once per function. */
const MARKERS = "dist";

/** Whether, and why not, a deployment's build migrates its database. */
export function migrationPlan(env: Readonly<Record<string, string | undefined>>): {
  migrate: boolean;
  reason: string;
  marker?: string;
} {
  if (!env.VERCEL_ENV) {
    return { migrate: false, reason: "not a deployment's build (no VERCEL_ENV): nothing to migrate" };
  }
  if (env.VERCEL_ENV === "preview" && env.MIGRATE_PREVIEW_DATABASE !== "true") {
    return {
      migrate: false,
      reason:
        "a preview build migrates only a database of its own: nothing migrated. Set MIGRATE_PREVIEW_DATABASE=true " +
        "in the Preview environment when each preview has its own database branch (Neon's integration makes one)",
    };
  }
  const deployment = env.VERCEL_DEPLOYMENT_ID?.replace(/[^A-Za-z0-9_-]/g, "");
  const marker = deployment ? join(MARKERS, `.migrated-${deployment}`) : undefined;
  if (marker && existsSync(marker)) {
    return { migrate: false, reason: `already migrated for ${deployment} in this build` };
  }
  return { migrate: true, reason: `${env.VERCEL_ENV} build`, ...(marker ? { marker } : {}) };
}

/**
 * A deployment's build step after the bundles (run by vercel-build): checks
 * the configuration as the functions will read it, then migrates — once per
 * build (Vercel runs the build command before tracing each function), and on
 * a preview only when told the preview has a database of its own. Any
 * failure fails the build, and the deployment never goes live.
 */
export function migrateForDeployment(env: Readonly<Record<string, string | undefined>>): void {
  const plan = migrationPlan(env);
  if (!plan.migrate) {
    console.log(`[vercel-build] ${plan.reason}`);
    return;
  }
  try {
    vercelLaneTimings(config());
  } catch (error) {
    console.error(`[vercel-build] ${error instanceof ConfigError ? error.message : error}`);
    process.exit(1);
  }
  try {
    execFileSync(process.execPath, ["scripts/db-migrate.ts"], { stdio: "inherit" });
  } catch {
    process.exit(1); // db:migrate said why
  }
  if (plan.marker) {
    mkdirSync(MARKERS, { recursive: true });
    writeFileSync(plan.marker, new Date().toISOString());
  }
}

if (import.meta.main) migrateForDeployment(process.env);
