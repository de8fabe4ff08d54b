import { writeFileSync } from "node:fs";
import { relative } from "node:path";
import {
  CATALOGUE_MODULE_PATH,
  readCatalogueSource,
  renderCatalogueModule,
} from "../lib/webhook/catalogue/catalogue-source.ts";

// Validates catalogue/*.json and rewrites the module the runtime reads. Exits 1, naming the file and field, on any error.
try {
  const entries = readCatalogueSource();
  writeFileSync(CATALOGUE_MODULE_PATH, renderCatalogueModule(entries));
  console.log(`[catalogue] wrote ${entries.length} events to ${relative(process.cwd(), CATALOGUE_MODULE_PATH)}`);
} catch (error) {
  console.error(`[catalogue] ${(error as Error).message}`);
  process.exitCode = 1;
}
