import { copyFileSync, cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createApp } from "../../../app/app.ts";
import type { Hooklane } from "../../hooklane.ts";
import { checkCatalogue } from "./catalogue-check.ts";
import { CATALOGUE_EXCLUSIONS } from "./catalogue-exclusions.ts";
import {
  CATALOGUE_MODULE_PATH,
  CATALOGUE_SOURCE_DIR,
  readCatalogueSource,
  renderCatalogueModule,
} from "./catalogue-source.ts";

const temporaryDirs: string[] = [];
afterEach(() => {
  for (const dir of temporaryDirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** The app as CI sees it: routes are registered up front, services are only read per request. */
const appRoutes = () => createApp({} as Hooklane).routes;

/** A copy of the committed catalogue source and generated module that a test may change. */
function workspace() {
  const root = mkdtempSync(join(tmpdir(), "hooklane-check-"));
  temporaryDirs.push(root);
  const sourceDir = join(root, "catalogue");
  const modulePath = join(root, "webhook-event-catalogue.data.ts");
  cpSync(CATALOGUE_SOURCE_DIR, sourceDir, { recursive: true });
  copyFileSync(CATALOGUE_MODULE_PATH, modulePath);
  return {
    sourceDir,
    modulePath,
    edit(file: string, change: (json: any) => void) {
      const json = JSON.parse(readFileSync(join(sourceDir, file), "utf8"));
      change(json);
      writeFileSync(join(sourceDir, file), JSON.stringify(json, null, 2));
    },
    /** What `npm run catalogue:generate` does, into this workspace. */
    regenerate() {
      writeFileSync(modulePath, renderCatalogueModule(readCatalogueSource(sourceDir)));
    },
  };
}

describe("checkCatalogue", () => {
  it("passes for the committed catalogue and the app: module fresh, every mutating route covered once", () => {
    const report = checkCatalogue({ routes: appRoutes() });
    expect(report.problems).toEqual([]);
    expect(report.events).toBe(readCatalogueSource().length);
    expect(report.routes).toBeGreaterThanOrEqual(report.events);
  });

  it("fails on a new mutating route with no entry, naming it, and passes once the entry is added and generated", () => {
    const app = createApp({} as Hooklane);
    app.post("/v3/payment-debts/:id/void", (c) => c.json({}));
    const files = workspace();
    const check = () => checkCatalogue({ routes: app.routes, ...files }).problems;

    expect(check()).toEqual([
      "POST /v3/payment-debts/:id/void: mutating route with no catalogue entry and no exclusion: declare its event in catalogue/ or exclude it in lib/webhook/catalogue/catalogue-exclusions.ts",
    ]);

    files.edit("payment-debt.json", (json) => {
      const updated = json.events[1];
      json.events.push({
        ...updated,
        internal: "payment-debt.voided",
        method: "POST",
        route: "/v3/payment-debts/:id/void",
        description: "A payment debt was voided.",
        example: { ...updated.example, type: "payment-debt.voided" },
      });
    });
    expect(check()).toEqual([
      expect.stringMatching(/webhook-event-catalogue\.data\.ts: stale: run `npm run catalogue:generate`/),
    ]);

    files.regenerate();
    expect(check()).toEqual([]);
  });

  it("names the file and field of an entry whose route the app does not have", () => {
    const files = workspace();
    files.edit("subscription.json", (json) => {
      json.events[1].route = "/v3/subscriptions/:id/plan";
    });
    files.regenerate();
    expect(checkCatalogue({ routes: appRoutes(), ...files }).problems).toEqual([
      'catalogue/subscription.json: events[1].route: "PATCH /v3/subscriptions/:id/plan" is not a route of the app',
      "PATCH /v3/subscriptions/:id: mutating route with no catalogue entry and no exclusion: declare its event in catalogue/ or exclude it in lib/webhook/catalogue/catalogue-exclusions.ts",
    ]);
  });

  it("rejects an exclusion for a missing route, and a route both excluded and declared", () => {
    const problems = checkCatalogue({
      routes: appRoutes(),
      exclusions: [
        ...CATALOGUE_EXCLUSIONS,
        { method: "DELETE", route: "/v3/gone", reason: "removed" },
        { method: "POST", route: "/v3/accounts", reason: "oops" },
      ],
    }).problems;
    expect(problems).toEqual([
      'lib/webhook/catalogue/catalogue-exclusions.ts: "DELETE /v3/gone" is not a route of the app',
      'lib/webhook/catalogue/catalogue-exclusions.ts: "POST /v3/accounts" is excluded but also declared by catalogue/account.json: events[0].route',
    ]);
  });

  it("reports an owner strategy naming a column the drizzle schema lacks, by file and field", () => {
    const files = workspace();
    files.edit("payment-debt.json", (json) => {
      json.events[0].owner.column = "owner_account";
    });
    expect(checkCatalogue({ routes: appRoutes(), ...files }).problems).toEqual([
      'catalogue/payment-debt.json: events[0].owner.column: table "payment_debt" has no column "owner_account"',
    ]);
  });
});
