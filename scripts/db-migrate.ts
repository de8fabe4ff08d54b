import { ConfigError, databaseConfig } from "../lib/config/env.ts";
import { openDatabase } from "../lib/db/client.ts";

// `npm run db:migrate`: applies pending migrations and exits — over DATABASE_URL_UNPOOLED when set (the direct
// connection: a pooler in transaction mode is no place for a migration), else DATABASE_URL, else the embedded
// database. Self-hosted processes also migrate on start; Vercel functions only check, so a Vercel build runs this.
try {
  const settings = databaseConfig();
  const database = await openDatabase({
    ...(settings.migrationDatabaseUrl ? { databaseUrl: settings.migrationDatabaseUrl } : {}),
    driver: settings.databaseDriver,
    pgliteDataDir: settings.pgliteDataDir,
    schema: "apply",
  });
  await database.close();
  console.log(`[db:migrate] ${database.kind} database is up to date`);
} catch (error) {
  console.error(`[db:migrate] ${error instanceof ConfigError ? error.message : error}`);
  process.exitCode = 1;
}
