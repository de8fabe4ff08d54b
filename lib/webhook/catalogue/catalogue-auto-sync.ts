import type { Database } from "../../db/client.ts";
import { applyCatalogueSync } from "./catalogue-sync.ts";
import { formatRefusal, summarizeCatalogueSync } from "./catalogue-sync-report.ts";
import { CATALOGUE } from "./webhook-event-catalogue.ts";

/**
 * `CATALOGUE_AUTO_SYNC`: brings the database's event types in line with the
 * catalogue this process runs, at start, so a laptop or a test needs no manual
 * step. Never forces: a deprecation that webhooks still name is logged and the
 * database is left as it was, for ops to decide with `npm run catalogue:sync`.
 * Throws only on database errors.
 */
export async function autoSyncCatalogue(database: Database): Promise<void> {
  const { outcome, plan } = await applyCatalogueSync(database, CATALOGUE);
  if (outcome === "applied") console.log(`[catalogue] auto-sync: ${summarizeCatalogueSync(plan)}`);
  if (outcome === "refused") {
    for (const line of formatRefusal(plan)) console.warn(`[catalogue] auto-sync ${line}`);
    console.warn("[catalogue] auto-sync changed nothing; run `npm run catalogue:sync` to decide (--force deprecates)");
  }
}
