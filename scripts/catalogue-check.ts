import { createApp } from "../app/app.ts";
import type { Hooklane } from "../lib/hooklane.ts";
import { checkCatalogue } from "../lib/webhook/catalogue/catalogue-check.ts";

// CI's catalogue gate: exits 1 and prints one line per problem, naming the file and field, or the route.
// Routes are registered up front and services are only read per request, so the app needs none here.
const report = checkCatalogue({ routes: createApp({} as Hooklane).routes });
if (report.problems.length > 0) {
  for (const problem of report.problems) console.error(`[catalogue:check] ${problem}`);
  process.exitCode = 1;
} else {
  console.log(
    `[catalogue:check] ${report.events} events, ${report.routes} mutating v3 routes covered, module up to date`,
  );
}
