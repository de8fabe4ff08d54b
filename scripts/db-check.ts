import { execFileSync } from "node:child_process";
import { cpSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { openDatabase } from "../lib/db/client.ts";
import { functionDrift } from "../lib/db/function-drift.ts";
import { unshippedSources } from "../lib/db/function-sources.ts";
import { drizzleGenerateArgs } from "./drizzle-kit.ts";
import { contractProblems } from "./migration-contract-check.ts";

// `npm run db:check`: fails when the database's definition and its sources disagree.
//   1. lib/db/schema.ts and the committed migrations (drizzle-kit generates into a scratch copy: a new file is drift).
//   2. lib/db/functions/ and lib/db/table-settings.sql and the committed migrations (a source changed with no
//      migration made from it); and no migration after the baseline takes away what the release before it still
//      uses (scripts/migration-contract-check.ts).
//   3. A migrated database and the sources: every function installed as its file defines it, one signature each, no
//      function without a file, every trigger there, every source called by some product code, the storage
//      settings applied. The database is DATABASE_URL's when set (checking a live one: it is read, never changed),
//      else a fresh embedded one migrated from drizzle/.
const problems: string[] = [];

// drizzle-kit resolves --out against the working directory, so the scratch copy lives here.
const scratch = mkdtempSync(".db-check-");
try {
  cpSync("drizzle", scratch, { recursive: true });
  const before = readdirSync(scratch).length;
  const output = execFileSync("npx", drizzleGenerateArgs(scratch, "drift"), {
    stdio: ["ignore", "pipe", "pipe"],
    encoding: "utf8",
  });
  const added = readdirSync(scratch).length - before;
  if (added === 0 && !output.includes("No schema changes")) {
    // drizzle-kit reports some failures with exit code 0; never read silence as agreement.
    problems.push(`drizzle-kit did not confirm the schema:\n${output}`);
  } else if (added > 0) {
    problems.push("lib/db/schema.ts has changes with no migration: run `npm run db:generate -- --name <what-changed>`");
  }
} finally {
  rmSync(scratch, { recursive: true, force: true });
}

problems.push(...contractProblems(process.cwd()));

for (const source of unshippedSources()) {
  problems.push(`${source} changed with no migration: run \`npm run db:generate -- --name <what-changed>\``);
}

const databaseUrl = process.env.DATABASE_URL;
const database = await openDatabase(
  databaseUrl ? { databaseUrl, schema: "as-is", poolMax: 1 } : { pgliteDataDir: "memory://" },
);
try {
  problems.push(...(await functionDrift(database)));
} finally {
  await database.close();
}

const where = databaseUrl ? "the database at DATABASE_URL" : "a database migrated from drizzle/";
if (problems.length > 0) {
  console.error(`[db:check] ${problems.length} problem(s) (${where}):\n${problems.map((p) => `  - ${p}`).join("\n")}`);
  process.exitCode = 1;
} else {
  console.log(`[db:check] schema, migrations and ${where} agree with lib/db/schema.ts and lib/db/functions/`);
}
