import { ConfigError, config } from "../lib/config/env.ts";
import { openDatabase } from "../lib/db/client.ts";

// `npm run db:migrate`: applies pending migrations to DATABASE_URL (or the embedded database) and exits.
// Processes also migrate on start; ops run this first so a deploy never waits on it.
try {
  const settings = config();
  const database = await openDatabase({
    ...(settings.databaseUrl ? { databaseUrl: settings.databaseUrl } : {}),
    driver: settings.databaseDriver,
    pgliteDataDir: settings.pgliteDataDir,
  });
  await database.close();
  console.log(`[db:migrate] ${database.kind} database is up to date`);
} catch (error) {
  console.error(`[db:migrate] ${error instanceof ConfigError ? error.message : error}`);
  process.exitCode = 1;
}
