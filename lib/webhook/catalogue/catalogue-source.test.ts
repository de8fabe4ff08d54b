import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { CATALOGUE_SOURCE_DIR, readCatalogueSource, renderCatalogueModule } from "./catalogue-source.ts";

const temporaryDirs: string[] = [];
afterEach(() => {
  for (const dir of temporaryDirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A copy of the committed catalogue source that a test may break. */
function sourceCopy(): { dir: string; label: string; edit(file: string, change: (json: any) => void): void } {
  const dir = mkdtempSync(join(tmpdir(), "hooklane-catalogue-"));
  temporaryDirs.push(dir);
  cpSync(CATALOGUE_SOURCE_DIR, dir, { recursive: true });
  return {
    dir,
    label: basename(dir),
    edit(file, change) {
      const json = JSON.parse(readFileSync(join(dir, file), "utf8"));
      change(json);
      writeFileSync(join(dir, file), JSON.stringify(json, null, 2));
    },
  };
}

describe("readCatalogueSource", () => {
  it("loads and validates the committed catalogue", () => {
    const entries = readCatalogueSource();
    expect(entries.map((entry) => entry.internal)).toContain("subscription.history.created");
    expect(new Set(entries.map((entry) => entry.internal)).size).toBe(entries.length);
  });

  it("names the file and the field of a schema violation", () => {
    const source = sourceCopy();
    source.edit("payment-debt.json", (json) => {
      json.events[1].owner.table = "Payment Debt";
    });
    expect(() => readCatalogueSource(source.dir)).toThrow(
      `${source.label}/payment-debt.json: events[1].owner.table: must be a lower-case SQL identifier`,
    );
  });

  it("rejects a misspelt key instead of dropping it", () => {
    const source = sourceCopy();
    source.edit("account.json", (json) => {
      json.events[0].deprecatd = true;
    });
    expect(() => readCatalogueSource(source.dir)).toThrow(`${source.label}/account.json: events[0]: Unrecognized key`);
  });

  it("names the file of a document that is not JSON", () => {
    const source = sourceCopy();
    writeFileSync(join(source.dir, "general-address.json"), "{ events: [");
    expect(() => readCatalogueSource(source.dir)).toThrow(
      `${source.label}/general-address.json: (file): not valid JSON`,
    );
  });

  it("rejects an owner that names a table or column the schema does not have", () => {
    const source = sourceCopy();
    source.edit("subscription-history.json", (json) => {
      json.events[0].owner.column = "acount";
    });
    expect(() => readCatalogueSource(source.dir)).toThrow(
      `${source.label}/subscription-history.json: events[0].owner.column: table "subscription" has no column "acount"`,
    );
  });

  it("rejects attributes that name a table or column the schema does not have, or a column twice", () => {
    const cases: Array<[(attributes: { table: string; columns: string[] }) => void, string]> = [
      [(a) => (a.table = "payment_debts"), 'events[0].attributes.table: no table "payment_debts" in lib/db/schema.ts'],
      [(a) => (a.columns[1] = "state"), 'events[0].attributes.columns[1]: table "payment_debt" has no column "state"'],
      [(a) => a.columns.push("currency"), 'events[0].attributes.columns[2]: "currency" is named twice'],
    ];
    for (const [change, problem] of cases) {
      const source = sourceCopy();
      source.edit("payment-debt.json", (json) => change(json.events[0].attributes));
      expect(() => readCatalogueSource(source.dir)).toThrow(`${source.label}/payment-debt.json: ${problem}`);
    }
  });

  it("rejects an example that the entry could not produce", () => {
    const source = sourceCopy();
    source.edit("payment-debt.json", (json) => {
      json.events[0].example.type = "payment-debt.opened";
    });
    expect(() => readCatalogueSource(source.dir)).toThrow(
      `${source.label}/payment-debt.json: events[0].example.type: must be "payment-debt.created"`,
    );
    source.edit("payment-debt.json", (json) => {
      json.events[0].example.type = "payment-debt.created";
      json.events[2].example.data.account = "acc_1";
    });
    expect(() => readCatalogueSource(source.dir)).toThrow(
      `${source.label}/payment-debt.json: events[2].example.data.account: must be null: owner kind "none" resolves no account`,
    );
  });

  it("requires an example body in the thin shape", () => {
    const source = sourceCopy();
    source.edit("account.json", (json) => {
      json.events[1].example.data.name = "Acme";
    });
    expect(() => readCatalogueSource(source.dir)).toThrow(
      `${source.label}/account.json: events[1].example.data: Unrecognized key: "name"`,
    );
  });

  it("rejects an event filed under another resource's file", () => {
    const source = sourceCopy();
    source.edit("subscription.json", (json) => {
      json.events[0].resource = "subscription.history";
      json.events[0].internal = "subscription.history.opened";
    });
    expect(() => readCatalogueSource(source.dir)).toThrow(
      `${source.label}/subscription.json: events[0].resource: "subscription.history" belongs in subscription-history.json`,
    );
  });

  it("rejects an internal name declared twice", () => {
    const source = sourceCopy();
    source.edit("account.json", (json) => {
      json.events.push({ ...json.events[0], route: "/v3/accounts/:id/clone" });
    });
    expect(() => readCatalogueSource(source.dir)).toThrow(
      `${source.label}/account.json: events[2].internal: "account.created" is already declared by ${source.label}/account.json events[0]`,
    );
  });

  it("rejects a method and route that emit two events, across files", () => {
    const source = sourceCopy();
    source.edit("subscription-history.json", (json) => {
      json.events[0].route = "/v3/subscriptions";
    });
    expect(() => readCatalogueSource(source.dir)).toThrow(
      `${source.label}/subscription.json: events[0].route: "POST /v3/subscriptions" is already declared by ${source.label}/subscription-history.json events[0]`,
    );
  });
});

describe("renderCatalogueModule", () => {
  it("renders the same bytes whatever the order of entries and keys", () => {
    const entries = readCatalogueSource();
    const shuffled = entries
      .toReversed()
      .map((entry) => Object.fromEntries(Object.entries(entry).toReversed()) as typeof entry);
    expect(renderCatalogueModule(shuffled)).toBe(renderCatalogueModule(entries));
  });

  it("says it is generated and by which command", () => {
    const module = renderCatalogueModule([]);
    expect(module).toMatch(/^\/\/ Generated by `npm run catalogue:generate`/);
    expect(module).toContain("as const satisfies readonly CatalogueEntry[];");
  });
});
