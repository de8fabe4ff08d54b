import { readFileSync, readdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { sql } from "drizzle-orm";
import type { Database } from "./client.ts";
import { readFunctionSources, readTableSettings, type FunctionSource } from "./function-sources.ts";

/** Where product code lives: a function no file here (or another function) names is called by nothing. */
const PRODUCT_FOLDERS = ["app", "lib", "scripts", "api"];
const ROOT = fileURLToPath(new URL("../../", import.meta.url));

interface InstalledFunction {
  name: string;
  signature: string;
  definition: string;
}

/**
 * What differs between a database and the function sources: a function missing, or whose definition is not its
 * file's (`pg_get_functiondef` of both, the file's installed in a scratch schema that is rolled back); one with
 * more than one signature (a retired overload); one of the schema's with no source file (a retired function); a
 * trigger a source attaches missing; a source no product code calls; a table whose storage settings are not
 * `table-settings.sql`'s. Each problem is one line, naming the function and what to do. Empty: no drift.
 */
export async function functionDrift(database: Database, sources = readFunctionSources()): Promise<string[]> {
  const problems: string[] = [];
  const installed = await installedFunctions(database);
  const expected = await sourceDefinitions(database, sources);
  const byName = Map.groupBy(installed, (f) => f.name);
  for (const source of sources) {
    const found = byName.get(source.name) ?? [];
    if (found.length === 0) {
      problems.push(`${source.name} is not installed: run \`npm run db:migrate\``);
    } else if (found.length > 1) {
      problems.push(
        `${source.name} has ${found.length} signatures (${found.map((f) => f.signature).join(", ")}): ` +
          `drop the retired ones in a migration`,
      );
    } else if (found[0]!.definition !== expected.get(source.name)) {
      problems.push(
        `${source.name} is not ${relative(ROOT, source.file)}: edited by hand, or its migration is missing ` +
          `(\`npm run db:generate -- --name <what-changed>\`)`,
      );
    }
  }
  const named = new Set(sources.map((s) => s.name));
  for (const [name, found] of byName) {
    if (!named.has(name)) {
      problems.push(`${name} (${found.map((f) => f.signature).join(", ")}) has no source file: drop it in a migration`);
    }
  }
  problems.push(...(await missingTriggers(database, sources)));
  problems.push(...uncalled(sources));
  problems.push(...(await tableSettingsDrift(database)));
  return problems;
}

/** The schema's own functions (an extension's are not the project's), with their definitions. */
async function installedFunctions(database: Database): Promise<InstalledFunction[]> {
  return (
    await database.rows<{ name: string; signature: string; definition: string }>(sql`
      select p.proname as name, p.oid::regprocedure::text as signature, pg_get_functiondef(p.oid) as definition
      from pg_proc p
      where p.pronamespace = current_schema()::regnamespace and p.prokind = 'f'
        and not exists (select 1 from pg_depend e where e.objid = p.oid and e.deptype = 'e')
    `)
  ).map((row) => ({ name: row.name, signature: row.signature, definition: row.definition }));
}

/** Each source's definition as this server prints it: installed in a scratch schema, read, rolled back. */
async function sourceDefinitions(database: Database, sources: FunctionSource[]): Promise<Map<string, string>> {
  const scratch = `hooklane_source_${process.pid}_${Date.now()}`;
  const definitions = new Map<string, string>();
  class RolledBack extends Error {}
  try {
    await database.transaction(async (tx) => {
      const [{ schema }] = (await tx.rows<{ schema: string }>(sql`select current_schema() as schema`)) as [
        { schema: string },
      ];
      await tx.rows(sql.raw(`create schema ${scratch}`));
      await tx.rows(sql.raw(`set local search_path = ${scratch}, ${schema}`));
      for (const source of sources) await tx.rows(sql.raw(source.statements[0]!));
      const rows = await tx.rows<{ name: string; definition: string }>(sql`
        select p.proname as name, pg_get_functiondef(p.oid) as definition
        from pg_proc p where p.pronamespace = ${scratch}::regnamespace
      `);
      for (const row of rows)
        definitions.set(row.name, row.definition.replace(`FUNCTION ${scratch}.`, `FUNCTION ${schema}.`));
      throw new RolledBack();
    });
  } catch (error) {
    if (!(error instanceof RolledBack)) throw error;
  }
  return definitions;
}

async function missingTriggers(database: Database, sources: FunctionSource[]): Promise<string[]> {
  const rows = await database.rows<{ name: string; table: string; function: string }>(sql`
    select t.tgname as name, c.relname as table, p.proname as function
    from pg_trigger t join pg_class c on c.oid = t.tgrelid join pg_proc p on p.oid = t.tgfoid
    where not t.tgisinternal and c.relnamespace = current_schema()::regnamespace
  `);
  return sources.flatMap((source) =>
    source.triggers
      .filter((t) => !rows.some((r) => r.name === t.name && r.table === t.table && r.function === source.name))
      .map((t) => `trigger ${t.name} on ${t.table} (running ${source.name}) is missing: run \`npm run db:migrate\``),
  );
}

/** Sources nothing calls: no product file and no other source names them, and no trigger of theirs runs them. */
function uncalled(sources: FunctionSource[]): string[] {
  const code = PRODUCT_FOLDERS.flatMap((folder) => productFiles(join(ROOT, folder)))
    .map((file) => readFileSync(file, "utf8"))
    .join("\n");
  return sources
    .filter((source) => {
      const word = new RegExp(`\\b${source.name}\\b`);
      const others = sources.filter((s) => s !== source).some((s) => word.test(s.text));
      return !others && !word.test(code) && source.triggers.length === 0;
    })
    .map((source) => `${source.name} is called by nothing: delete its source and drop it in a migration`);
}

function productFiles(folder: string): string[] {
  let entries: string[];
  try {
    entries = readdirSync(folder);
  } catch {
    return [];
  }
  return entries.flatMap((entry) => {
    const path = join(folder, entry);
    if (statSync(path).isDirectory()) return entry === "functions" ? [] : productFiles(path);
    return path.endsWith(".ts") && !path.endsWith(".test.ts") ? [path] : [];
  });
}

/** Tables whose storage settings are not what `table-settings.sql` sets. */
async function tableSettingsDrift(database: Database): Promise<string[]> {
  const problems: string[] = [];
  for (const statement of readTableSettings().statements) {
    const match = /^ALTER TABLE "(\w+)" SET \((.*)\);$/.exec(statement);
    if (!match) {
      problems.push(`table-settings.sql: cannot read ${JSON.stringify(statement)}`);
      continue;
    }
    const [, table, list] = match as unknown as [string, string, string];
    const wanted = list.split(",").map((pair) => pair.replace(/\s+/g, ""));
    const [row] = await database.rows<{ options: string[] | null }>(sql`
      select reloptions as options from pg_class
      where relname = ${table} and relnamespace = current_schema()::regnamespace
    `);
    const have = new Set(row?.options ?? []);
    const missing = wanted.filter((option) => !have.has(option));
    if (missing.length > 0) problems.push(`${table} lacks ${missing.join(", ")}: run \`npm run db:migrate\``);
  }
  return problems;
}
