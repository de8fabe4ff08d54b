import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { basename, join } from "node:path";
import { fileURLToPath } from "node:url";
import { MIGRATIONS_FOLDER } from "./migrations.ts";

/** Every database function's current definition: one file per function, named after it. */
export const FUNCTIONS_FOLDER = fileURLToPath(new URL("./functions", import.meta.url));
/** The lane tables' storage settings (`ALTER TABLE … SET (…)`), applied by the migration that changes them. */
export const TABLE_SETTINGS_FILE = fileURLToPath(new URL("./table-settings.sql", import.meta.url));

/** One function's source file. */
export interface FunctionSource {
  name: string;
  file: string;
  text: string;
  /** Its statements: the function's `CREATE OR REPLACE FUNCTION`, then any trigger that runs it. */
  statements: string[];
  /** Triggers the file attaches the function to: name and table. */
  triggers: { name: string; table: string }[];
}

const STATEMENT_START = /^(?=CREATE OR REPLACE (?:FUNCTION|TRIGGER) )/m;
const FUNCTION_NAME = /^CREATE OR REPLACE FUNCTION (\w+)\(/m;
const TRIGGER = /^CREATE OR REPLACE TRIGGER (\w+)\s+(?:AFTER|BEFORE|INSTEAD OF)\s+[\w ]+?\s+ON\s+(\w+)/gm;

/**
 * Reads every function source. Throws when a file does not define exactly the function it is named after, first,
 * with nothing but its header before it.
 */
export function readFunctionSources(folder = FUNCTIONS_FOLDER): FunctionSource[] {
  return readdirSync(folder)
    .filter((file) => file.endsWith(".sql"))
    .sort()
    .map((file) => {
      const path = join(folder, file);
      const text = readFileSync(path, "utf8");
      const name = basename(file, ".sql");
      const [header, ...statements] = text.split(STATEMENT_START);
      const first = statements[0] ?? "";
      if (FUNCTION_NAME.exec(first)?.[1] !== name) {
        throw new Error(`${path}: its first statement must be CREATE OR REPLACE FUNCTION ${name}(…)`);
      }
      if (statements.slice(1).some((statement) => FUNCTION_NAME.test(statement))) {
        throw new Error(`${path}: one function per file`);
      }
      const triggers = [...text.matchAll(TRIGGER)].map((m) => ({ name: m[1]!, table: m[2]! }));
      return {
        name,
        file: path,
        text,
        statements: [header + first, ...statements.slice(1)].map((s) => s.trim()),
        triggers,
      };
    });
}

/** The table settings' statements. */
export function readTableSettings(file = TABLE_SETTINGS_FILE): { text: string; statements: string[] } {
  const text = readFileSync(file, "utf8");
  const statements = text
    .split("\n")
    .filter((line) => line.startsWith("ALTER TABLE"))
    .map((line) => line.trim());
  return { text, statements };
}

/** What a migration generator remembers of a source: the hash of the text it last shipped. */
export const sourceHash = (text: string): string => createHash("sha256").update(text).digest("hex");

/** What the migrations so far shipped of each source (the hash of its text), kept by `npm run db:generate`. */
export const SOURCES_MANIFEST = join(MIGRATIONS_FOLDER, "sources.json");

export interface SourcesManifest {
  functions: Record<string, string>;
  tableSettings: string | null;
}

export function readSourcesManifest(file = SOURCES_MANIFEST): SourcesManifest {
  return existsSync(file) ? JSON.parse(readFileSync(file, "utf8")) : { functions: {}, tableSettings: null };
}

/** Sources whose text is not what the migrations shipped: a change that still needs `npm run db:generate`. */
export function unshippedSources(manifest = readSourcesManifest()): string[] {
  const sources = readFunctionSources();
  const settings = readTableSettings();
  return [
    ...sources
      .filter((s) => manifest.functions[s.name] !== sourceHash(s.text))
      .map((s) => `lib/db/functions/${s.name}.sql`),
    ...Object.keys(manifest.functions)
      .filter((name) => !sources.some((s) => s.name === name))
      .map((name) => `lib/db/functions/${name}.sql (deleted)`),
    ...(manifest.tableSettings === sourceHash(settings.text) ? [] : ["lib/db/table-settings.sql"]),
  ];
}
