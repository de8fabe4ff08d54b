import { PGlite } from "@electric-sql/pglite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FILTER_MAX_LENGTH, filterAttributes, filterPath, parseFilter, undeclaredAttribute } from "./webhook-filter.ts";

describe("webhook filters", () => {
  // Routing evaluates the compiled path in PostgreSQL (`attributes @@ path`): so do these tests.
  let db: PGlite;
  beforeAll(async () => {
    db = await PGlite.create();
  });
  afterAll(async () => {
    await db.close();
  });
  const matches = async (filter: string, attributes: unknown): Promise<boolean> => {
    const { rows } = await db.query<{ m: boolean }>("select coalesce($1::jsonb @@ $2::jsonpath, false) as m", [
      JSON.stringify(attributes),
      filterPath(parseFilter(filter)),
    ]);
    return rows[0]!.m;
  };

  it.each([
    ['currency in ["EUR"]', { currency: "EUR" }, true],
    ['currency in ["EUR"]', { currency: "eur" }, false],
    ['currency in ["EUR", "USD"]', { currency: "USD" }, true],
    ['currency == "EUR"', {}, false],
    ['currency != "EUR"', {}, true],
    ['currency != "EUR"', { currency: null }, true],
    ['currency != "EUR"', { currency: "EUR" }, false],
    ["exists(plan)", { plan: "pro" }, true],
    ["exists(plan)", { plan: null }, false],
    ["exists(plan)", {}, false],
    ["not exists(plan)", {}, true],
    ['status == "paid" and not currency == "GBP"', { status: "paid", currency: "EUR" }, true],
    ['status == "paid" and not currency == "GBP"', { status: "paid", currency: "GBP" }, false],
    // `not` binds tightest, then `and`, then `or`.
    ['a == "1" or b == "2" and c == "3"', { a: "1" }, true],
    ['(a == "1" or b == "2") and c == "3"', { a: "1" }, false],
    ['not a == "1" or b == "2"', { a: "1", b: "2" }, true],
    // Names that are words of the path language, and values that need escaping, stay what they are.
    ['last == "x" and strict == "y"', { last: "x", strict: "y" }, true],
    ['plan == "a\\"b\\\\c $.x"', { plan: 'a"b\\c $.x' }, true],
    ['plan == "ünïcødé 🚀"', { plan: "ünïcødé 🚀" }, true],
    // A message without attributes matches as one whose attributes are all absent.
    ['currency == "EUR"', null, false],
  ])("%s over %j: %s", async (filter, attributes, expected) => {
    expect(await matches(filter, attributes)).toBe(expected);
  });

  it.each([
    ['currency in ["EUR"', 19, 'expected "," or "]", found the end of the filter'],
    ['currency == "EUR" plan', 19, 'expected "and", "or" or the end of the filter, found "plan"'],
    ['Currency == "EUR"', 1, "attribute names are lower-case"],
    ["amount == 10", 11, 'values are strings in double quotes, e.g. "EUR"'],
    ["plan == 'pro'", 9, "values are strings in double quotes"],
    ['plan = "pro"', 6, 'unexpected "="'],
    ["", 1, 'expected an attribute name, "not", "exists" or "(", found the end of the filter'],
    ['(plan == "pro"', 15, 'expected ")"'],
    ["exists plan", 8, 'expected "("'],
    ["plan in []", 10, "expected a string value"],
    ['plan == "a\\qb"', 9, "not a valid JSON string"],
    ['plan == "\\u0000"', 9, "may not hold \\u0000"],
    ['plan == "\\ud800"', 9, "lone surrogate"],
    [`plan == "${"x".repeat(201)}"`, 9, "longer than 200 characters"],
    ['and == "x"', 1, "expected an attribute name"],
  ])("refuses %j at position %i", (filter, position, reason) => {
    expect(() => parseFilter(filter)).toThrow(expect.objectContaining({ position }));
    expect(() => parseFilter(filter)).toThrow(reason);
  });

  it("refuses a filter longer than the limit, and nests as deep as that length allows", async () => {
    expect(() => parseFilter(`${"(".repeat(FILTER_MAX_LENGTH)}`)).toThrow(/position 1001/);
    const deep = `${"not (".repeat(90)}a == "1"${")".repeat(90)}`;
    expect(deep.length).toBeLessThanOrEqual(FILTER_MAX_LENGTH);
    expect(await matches(deep, { a: "1" })).toBe(true);
  });

  it("names the attributes a filter reads, and the first one a type does not declare", () => {
    const filter = parseFilter('currency in ["EUR"] and (exists(plan) or not currency == "USD")');
    expect(filterAttributes(filter)).toEqual(["currency", "plan"]);
    const debt = { internal: "payment-debt.created", attributes: { table: "payment_debt", columns: ["currency"] } };
    const account = { internal: "account.created" };
    expect(undeclaredAttribute(parseFilter('currency == "EUR"'), [debt])).toBeUndefined();
    expect(undeclaredAttribute(filter, [debt])).toMatch(
      /^"plan" is not an attribute of payment-debt.created \(it declares currency\)/,
    );
    expect(undeclaredAttribute(parseFilter('currency == "EUR"'), [debt, account])).toMatch(
      /^"currency" is not an attribute of account.created \(it declares none\)/,
    );
  });
});
