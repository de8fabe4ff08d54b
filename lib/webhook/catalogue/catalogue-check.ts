import { readFileSync } from "node:fs";
import { relative } from "node:path";
import { catalogueEntrySchema } from "./catalogue-entry.ts";
import { CATALOGUE_EXCLUSIONS } from "./catalogue-exclusions.ts";
import {
  CATALOGUE_MODULE_PATH,
  CATALOGUE_SOURCE_DIR,
  readCatalogueDeclarations,
  renderCatalogueModule,
} from "./catalogue-source.ts";

/** One route of the app's table, as Hono lists it in `app.routes`. */
export interface AppRoute {
  method: string;
  path: string;
}

export interface CatalogueCheckReport {
  /** One message per problem, naming the file and field, or the route; empty when the catalogue is sound. */
  problems: string[];
  events: number;
  /** Mutating v3 routes of the app. */
  routes: number;
}

const EXCLUSIONS_FILE = "lib/webhook/catalogue/catalogue-exclusions.ts";
const MUTATING: ReadonlySet<string> = new Set(catalogueEntrySchema.shape.method.options);

/**
 * What CI holds the catalogue to: the source is valid (including owner
 * strategies that name real tables and columns), the generated module is not
 * stale, every mutating v3 route of `routes` has exactly one catalogue entry
 * or exclusion, and no entry or exclusion names a route the app lacks.
 * Never throws for a problem of the catalogue; reports it instead.
 */
export function checkCatalogue(options: {
  routes: readonly AppRoute[];
  sourceDir?: string;
  modulePath?: string;
  exclusions?: typeof CATALOGUE_EXCLUSIONS;
}): CatalogueCheckReport {
  const modulePath = options.modulePath ?? CATALOGUE_MODULE_PATH;
  const exclusions = options.exclusions ?? CATALOGUE_EXCLUSIONS;
  const appRoutes = new Set(
    options.routes
      .filter((route) => MUTATING.has(route.method) && route.path.startsWith("/v3/"))
      .map((route) => `${route.method} ${route.path}`),
  );

  let declarations;
  try {
    declarations = readCatalogueDeclarations(options.sourceDir ?? CATALOGUE_SOURCE_DIR);
  } catch (error) {
    // A source that does not parse cannot be checked further; its message already names the file and field.
    return { problems: [(error as Error).message], events: 0, routes: appRoutes.size };
  }

  const problems: string[] = [];
  if (readIfExists(modulePath) !== renderCatalogueModule(declarations.map((declaration) => declaration.entry))) {
    problems.push(`${relative(process.cwd(), modulePath)}: stale: run \`npm run catalogue:generate\` and commit it`);
  }

  const declared = new Map<string, string>();
  for (const { entry, at } of declarations) {
    const route = `${entry.method} ${entry.route}`;
    declared.set(route, at("route"));
    if (!appRoutes.has(route)) problems.push(`${at("route")}: "${route}" is not a route of the app`);
  }
  const excluded = new Set<string>();
  for (const exclusion of exclusions) {
    const route = `${exclusion.method} ${exclusion.route}`;
    excluded.add(route);
    if (!appRoutes.has(route)) problems.push(`${EXCLUSIONS_FILE}: "${route}" is not a route of the app`);
    const declaredAt = declared.get(route);
    if (declaredAt) problems.push(`${EXCLUSIONS_FILE}: "${route}" is excluded but also declared by ${declaredAt}`);
  }
  for (const route of appRoutes) {
    if (!declared.has(route) && !excluded.has(route)) {
      problems.push(
        `${route}: mutating route with no catalogue entry and no exclusion: declare its event in catalogue/ or exclude it in ${EXCLUSIONS_FILE}`,
      );
    }
  }
  return { problems, events: declarations.length, routes: appRoutes.size };
}

function readIfExists(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8");
  } catch (error) {
    // A module that was never generated is as stale as an old one.
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}
