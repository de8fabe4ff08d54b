import type { Database } from "../../db/client.ts";
import { silentLogger, type Logger } from "../../log/logger.ts";
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
export async function autoSyncCatalogue(database: Database, logger: Logger = silentLogger): Promise<void> {
  const log = logger.child({ component: "catalogue" });
  const { outcome, plan } = await applyCatalogueSync(database, CATALOGUE);
  if (outcome === "applied") log.info(`auto-sync: ${summarizeCatalogueSync(plan)}`);
  if (outcome === "refused") {
    for (const line of formatRefusal(plan)) log.warn(`auto-sync ${line}`);
    log.warn("auto-sync changed nothing; run `npm run catalogue:sync` to decide (--force deprecates)");
  }
}
