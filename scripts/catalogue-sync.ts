// Syncs the catalogue this build runs into the database of one environment (DATABASE_URL, or the embedded
// database). Prints the diff first; applies only with --yes or a confirmation at the terminal.
//   npm run catalogue:sync -- [--dry-run] [--yes] [--force]
// Exit codes: 0 the database matches (or now does); 1 there is a diff that was not applied (dry run,
// declined, or refused); 2 usage or runtime error.
import { createInterface } from "node:readline/promises";
import { parseArgs } from "node:util";
import { ConfigError, databaseConfig, type DatabaseConfig } from "../lib/config/env.ts";
import { openDatabase, type Database } from "../lib/db/client.ts";
import { SchemaBehindError } from "../lib/db/migrations.ts";
import {
  applyCatalogueSync,
  blockedDeprecations,
  hasChanges,
  planCatalogueSync,
} from "../lib/webhook/catalogue/catalogue-sync.ts";
import {
  formatCatalogueDiff,
  formatRefusal,
  summarizeCatalogueSync,
} from "../lib/webhook/catalogue/catalogue-sync-report.ts";
import { CATALOGUE } from "../lib/webhook/catalogue/webhook-event-catalogue.ts";

const usage = "usage: npm run catalogue:sync -- [--dry-run] [--yes] [--force]";

interface Flags {
  dryRun: boolean;
  yes: boolean;
  force: boolean;
}

const flags = parseFlags();

let opened: Database | undefined;
try {
  const settings = databaseConfig();
  opened = await openDatabase({
    ...(settings.databaseUrl ? { databaseUrl: settings.databaseUrl } : {}),
    driver: settings.databaseDriver,
    pgliteDataDir: settings.pgliteDataDir,
    applicationName: "hooklane-catalogue-sync",
    // A dry run changes nothing, the schema included: a database behind the migrations is refused, not migrated.
    schema: flags.dryRun ? "verify" : "apply",
  });
  process.exitCode = await sync(opened, describeTarget(settings), flags);
} catch (error) {
  console.error(error instanceof ConfigError || error instanceof SchemaBehindError ? error.message : error);
  process.exitCode = 2;
} finally {
  await opened?.close();
}

async function sync(database: Database, target: string, flags: Flags): Promise<number> {
  console.log(`[catalogue:sync] ${CATALOGUE.length} events in the catalogue -> ${target}`);
  const plan = await planCatalogueSync(database, CATALOGUE);
  for (const line of formatCatalogueDiff(plan)) console.log(line);
  console.log(`[catalogue:sync] diff: ${summarizeCatalogueSync(plan)}`);
  if (!hasChanges(plan)) {
    console.log("[catalogue:sync] the database matches the catalogue; nothing to do");
    return 0;
  }

  const refusal = formatRefusal(plan);
  if (refusal.length > 0 && !flags.force) {
    for (const line of refusal) console.error(`[catalogue:sync] ${line}`);
    console.error(
      "[catalogue:sync] nothing changed: move those webhooks off the event first, or run again with --force to deprecate it anyway (they stop receiving it)",
    );
    return 1;
  }
  if (flags.dryRun) {
    console.log("[catalogue:sync] dry run: nothing changed");
    return 1;
  }
  if (!flags.yes && !(await confirm(`Apply these changes to ${target}? [y/N] `))) {
    console.log("[catalogue:sync] not confirmed: nothing changed");
    return 1;
  }

  const { outcome, plan: applied } = await applyCatalogueSync(database, CATALOGUE, {
    force: flags.force,
    onStep: (step) => console.log(`[catalogue:sync] [${step.index}/${step.total}] ${step.kind} ${step.internal}`),
  });
  if (outcome === "refused") {
    // Someone subscribed between the diff and the apply.
    for (const line of formatRefusal(applied)) console.error(`[catalogue:sync] ${line}`);
    console.error("[catalogue:sync] nothing changed");
    return 1;
  }
  const forced = blockedDeprecations(applied).length;
  console.log(
    `[catalogue:sync] applied: ${summarizeCatalogueSync(applied)}${forced > 0 ? ` (${forced} forced past their subscribers)` : ""}`,
  );
  return 0;
}

function parseFlags(): Flags {
  let flags: Flags;
  try {
    const { values } = parseArgs({
      options: {
        "dry-run": { type: "boolean", default: false },
        yes: { type: "boolean", default: false },
        force: { type: "boolean", default: false },
      },
    });
    flags = { dryRun: values["dry-run"], yes: values.yes, force: values.force };
  } catch (error) {
    console.error(`${(error as Error).message}\n${usage}`);
    process.exit(2);
  }
  if (flags.dryRun && flags.yes) {
    console.error(`--dry-run and --yes contradict each other\n${usage}`);
    process.exit(2);
  }
  return flags;
}

async function confirm(question: string): Promise<boolean> {
  if (!process.stdin.isTTY) {
    console.error("[catalogue:sync] stdin is not a terminal: pass --yes to apply without a prompt");
    return false;
  }
  const prompt = createInterface({ input: process.stdin, output: process.stdout });
  try {
    return /^y(es)?$/i.test((await prompt.question(question)).trim());
  } finally {
    prompt.close();
  }
}

/** Where the sync writes, without credentials: ops must see which environment they are about to change. */
function describeTarget(settings: DatabaseConfig): string {
  if (!settings.databaseUrl) return `embedded PGlite in ${settings.pgliteDataDir}`;
  const url = new URL(settings.databaseUrl);
  return `PostgreSQL ${url.host}${url.pathname}`;
}
