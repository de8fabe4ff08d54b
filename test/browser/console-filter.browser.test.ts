import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../support/eventually.ts";
import { HARNESS_START_MS } from "../support/harness.ts";
import { hasChromium, seriousViolations, startBrowserFixture, type BrowserFixture } from "../support/browser.ts";
import { startReceiver, type TestReceiver } from "../support/receiver.ts";

const ACCOUNT = "acc_browser_filter";
const OTHER = "acc_browser_filter_other";
const DEBT_EVENTS = ["payment-debt.created", "payment-debt.updated"];

describe.skipIf(!hasChromium())("the console edits a webhook's filter, with a preview over recent events", () => {
  let fixture: BrowserFixture;
  let receiver: TestReceiver;

  beforeAll(async () => {
    receiver = await startReceiver(() => ({ status: 200 }));
    fixture = await startBrowserFixture();
    await fixture.harness.accounts(ACCOUNT, OTHER);
  }, HARNESS_START_MS);
  afterAll(async () => {
    await fixture?.close();
    await receiver?.close();
  });

  const as = (account: string) => (method: string, path: string, body?: unknown) =>
    fixture.harness.call(method, path, { account, ...(body ? { body } : {}) });

  /** A webhook of `account` for the debt events, and one debt opened per currency: its delivery log holds them all. */
  async function webhookWithDebts(account: string, path: string, currencies: string[]): Promise<string> {
    const created = await as(account)("POST", "/v3/webhooks", { url: `${receiver.url}${path}`, events: DEBT_EVENTS });
    expect(created.status, created.text).toBe(201);
    for (const currency of currencies) {
      const debt = await as(account)("POST", "/v3/payment-debts", { amount: "1.00", currency });
      expect(debt.status, debt.text).toBe(201);
    }
    await fixture.harness.settled();
    await eventually(
      async () => (await as(account)("GET", `/v3/webhooks/${created.body.id}/dispatches?limit=100`)).body.data.length,
      (count) => count === currencies.length,
    );
    return created.body.id;
  }

  const filterField = (page: Page) => page.getByLabel("Filter", { exact: true });
  const preview = async (page: Page, filter: string) => {
    await filterField(page).fill(filter);
    await page.getByRole("button", { name: "Preview filter" }).click();
    await page.locator("#filter-preview").waitFor();
    return page.locator("#filter-preview").innerText();
  };
  const filterFact = async (page: Page) =>
    /Filter\s+(.*)\n/.exec(await page.locator("dl.facts").first().innerText())?.[1];

  it("refuses a filter that does not parse, previews one over the webhook's account only, and saves it", async () => {
    const id = await webhookWithDebts(ACCOUNT, "/mine", ["EUR", "USD", "EUR", "GBP"]);
    // Another account's EUR debts: never in this account's preview.
    await webhookWithDebts(OTHER, "/theirs", ["EUR", "EUR"]);

    const page = await fixture.page();
    await fixture.signIn(page, ACCOUNT);
    await page.goto(`${fixture.origin}/console/webhooks/${id}`);
    expect(await filterFact(page)).toBe("none — every event it subscribes to");
    await page.getByRole("link", { name: "Edit" }).click();
    expect(await filterField(page).inputValue()).toBe("");

    // Previewed: the position where it stopped making sense, the form as typed.
    expect(await preview(page, 'currency in ["EUR"')).toBe(
      'filter: position 19: expected "," or "]", found the end of the filter',
    );
    expect(await filterField(page).inputValue()).toBe('currency in ["EUR"');
    expect(await page.getByLabel("payment-debt.created").isChecked()).toBe(true);
    expect(await seriousViolations(page)).toEqual([]);
    expect(await preview(page, 'plan == "pro"')).toContain(
      'filter: "plan" is not an attribute of payment-debt.created (it declares currency, status)',
    );
    // Saved: refused as the form's error, and nothing changes.
    await filterField(page).fill('currency in ["EUR"');
    await page.getByRole("button", { name: "Save changes" }).click();
    expect(await page.getByRole("alert").innerText()).toBe(
      'filter: position 19: expected "," or "]", found the end of the filter',
    );
    expect(await filterField(page).inputValue()).toBe('currency in ["EUR"');
    expect((await as(ACCOUNT)("GET", `/v3/webhooks/${id}`)).body.filter).toBeNull();

    expect(await preview(page, 'currency in ["EUR"]')).toBe("Would have matched 2 of the last 4 events.");
    expect(await filterField(page).inputValue()).toBe('currency in ["EUR"]');
    expect(await seriousViolations(page)).toEqual([]);
    expect(await preview(page, "")).toBe("No filter: every event it subscribes to is sent.");
    expect(await preview(page, 'currency in ["EUR"]')).toBe("Would have matched 2 of the last 4 events.");
    await page.getByRole("button", { name: "Save changes" }).click();
    await page.waitForURL(`${fixture.origin}/console/webhooks/${id}?notice=Changes%20saved.`);
    expect(await filterFact(page)).toBe('currency in ["EUR"]');
    expect((await as(ACCOUNT)("GET", `/v3/webhooks/${id}`)).body.filter).toBe('currency in ["EUR"]');

    // Emptied: no filter again.
    await page.getByRole("link", { name: "Edit" }).click();
    expect(await filterField(page).inputValue()).toBe('currency in ["EUR"]');
    await filterField(page).fill("");
    await page.getByRole("button", { name: "Save changes" }).click();
    await page.waitForURL(`${fixture.origin}/console/webhooks/${id}?notice=Changes%20saved.`);
    expect(await filterFact(page)).toBe("none — every event it subscribes to");
    expect((await as(ACCOUNT)("GET", `/v3/webhooks/${id}`)).body.filter).toBeNull();
  });

  it("creates a webhook with a filter, refused as the form's error first", async () => {
    const page = await fixture.page();
    await fixture.signIn(page, ACCOUNT);
    await page.goto(`${fixture.origin}/console/webhooks/new`);
    expect(await page.getByRole("button", { name: "Preview filter" }).count()).toBe(0);
    await page.getByLabel("Endpoint URL").fill(`${receiver.url}/created`);
    await page.getByLabel("payment-debt.updated").check();
    await filterField(page).fill('status == "paid" or');
    await page.getByRole("button", { name: "Create webhook" }).click();
    expect(await page.getByRole("alert").innerText()).toBe(
      'filter: position 20: expected an attribute name, "not", "exists" or "(", found the end of the filter',
    );
    expect(await filterField(page).inputValue()).toBe('status == "paid" or');
    await filterField(page).fill('status == "paid"');
    await page.getByRole("button", { name: "Create webhook" }).click();
    await page.getByRole("link", { name: "Continue to the webhook" }).click();
    expect(await filterFact(page)).toBe('status == "paid"');
  });

  it("does the same through a portal session, and previews no other account's webhook", async () => {
    const id = await webhookWithDebts(ACCOUNT, "/portal", ["EUR", "USD", "GBP"]);
    const theirs = (await as(OTHER)("GET", "/v3/webhooks?limit=100")).body.data[0].id as string;
    const session = await as(ACCOUNT)("POST", "/v3/portal-sessions", { frameAncestors: ["https://app.example.com"] });
    expect(session.status, session.text).toBe(201);
    const portal = `${fixture.origin}${new URL(session.body.url).pathname}`;

    const page = await fixture.page();
    await page.goto(`${portal}/webhooks/${id}/edit`);
    // The account's recent events: this webhook's three and the first test's four.
    expect(await preview(page, 'currency != "EUR"')).toBe("Would have matched 4 of the last 7 events.");
    await page.getByRole("button", { name: "Save changes" }).click();
    await page.waitForURL(`${portal}/webhooks/${id}?notice=Changes%20saved.`);
    expect(await filterFact(page)).toBe('currency != "EUR"');
    expect((await as(ACCOUNT)("GET", `/v3/webhooks/${id}`)).body.filter).toBe('currency != "EUR"');

    // Another account's webhook: not found, previewed or not (with this session's own form token).
    const csrf = (await page.locator('input[name="csrf"]').first().getAttribute("value"))!;
    const answer = await page.goto(`${portal}/webhooks/${theirs}/edit`);
    expect(answer!.status()).toBe(404);
    const posted = await page.request.post(`${portal}/webhooks/${theirs}/edit/preview`, {
      headers: { origin: fixture.origin },
      form: { csrf, filter: 'currency in ["EUR"]', events: "payment-debt.created" },
    });
    expect(posted.status()).toBe(404);
    expect(await posted.text()).not.toContain("Would have matched");
  });
});
