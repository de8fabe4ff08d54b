import { execFileSync } from "node:child_process";
import { readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import {
  readFunctionSources,
  readSourcesManifest,
  readTableSettings,
  sourceHash,
  SOURCES_MANIFEST,
  TABLE_SETTINGS_FILE,
  type SourcesManifest,
} from "../lib/db/function-sources.ts";
import { MIGRATIONS_FOLDER } from "../lib/db/migrations.ts";
import { drizzleGenerateArgs } from "./drizzle-kit.ts";

// `npm run db:generate -- --name <what-changed>`: the next migration, generated. drizzle-kit writes what
// lib/db/schema.ts changed in the tables; then every function source in lib/db/functions/ whose text changed since
// the last migration is appended whole (CREATE OR REPLACE), a function whose source was deleted is dropped, and
// lib/db/table-settings.sql is applied again when it changed. What each migration shipped is remembered in
// drizzle/sources.json, so `npm run db:check` can tell a source changed without its migration.

const BREAKPOINT = "\n--> statement-breakpoint\n";

const { values } = parseArgs({ options: { name: { type: "string" } } });
if (!values.name || !/^[a-z0-9-]+$/.test(values.name)) {
  console.error("[db:generate] usage: npm run db:generate -- --name <what-changed> (lowercase words and dashes)");
  process.exit(2);
}

const manifest = readSourcesManifest();
const sources = readFunctionSources();
const settings = readTableSettings();
const changed = sources.filter((s) => manifest.functions[s.name] !== sourceHash(s.text));
const dropped = Object.keys(manifest.functions).filter((name) => !sources.some((s) => s.name === name));
const settingsChanged = manifest.tableSettings !== sourceHash(settings.text);

const migrations = () =>
  readdirSync(MIGRATIONS_FOLDER)
    .filter((f) => f.endsWith(".sql"))
    .sort();
const before = migrations().length;
drizzleKit([]);
if (migrations().length === before) {
  if (changed.length === 0 && dropped.length === 0 && !settingsChanged) {
    console.log("[db:generate] nothing changed: no migration");
    process.exit(0);
  }
  // No table changed: a migration of our own statements only.
  drizzleKit(["--custom"]);
}
const file = join(MIGRATIONS_FOLDER, migrations().at(-1)!);
const statements = [
  ...dropped.map((name) => `DROP FUNCTION IF EXISTS ${name} CASCADE;`),
  ...changed.flatMap((source) => source.statements),
  ...(settingsChanged ? settings.statements : []),
];
const existing = readFileSync(file, "utf8").trim();
writeFileSync(file, [...(existing ? [existing] : []), ...statements].join(BREAKPOINT) + "\n");
writeFileSync(
  SOURCES_MANIFEST,
  JSON.stringify(
    {
      functions: Object.fromEntries(sources.map((s) => [s.name, sourceHash(s.text)])),
      tableSettings: sourceHash(readFileSync(TABLE_SETTINGS_FILE, "utf8")),
    } satisfies SourcesManifest,
    null,
    2,
  ) + "\n",
);
console.log(
  `[db:generate] ${file}: ${changed.length} function(s) (re)defined, ${dropped.length} dropped` +
    (settingsChanged ? ", table settings applied" : ""),
);

function drizzleKit(flags: string[]): void {
  execFileSync("npx", drizzleGenerateArgs("./drizzle", values.name!, flags), { stdio: "inherit" });
}
