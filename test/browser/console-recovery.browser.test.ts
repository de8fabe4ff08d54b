import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../support/eventually.ts";
import { HARNESS_START_MS } from "../support/harness.ts";
import { hasChromium, screenshot, startBrowserFixture, type BrowserFixture } from "../support/browser.ts";
import { startReceiver, type TestReceiver } from "../support/receiver.ts";

const ACCOUNT = "acc_browser_failing";

describe.skipIf(!hasChromium())("the console in a browser: a failing endpoint and its recovery", () => {
  let fixture: BrowserFixture;
  let receiver: TestReceiver;
  let healthy = false;
  /** An event the receiver refuses even once it is healthy again. */
  let stubborn = "";

  beforeAll(async () => {
    receiver = await startReceiver((post) => ({
      status: healthy && !post.body.includes(stubborn) ? 200 : 500,
      body: healthy ? "ok" : "database is down",
    }));
    fixture = await startBrowserFixture();
    await fixture.harness.accounts(ACCOUNT);
  }, HARNESS_START_MS);
  afterAll(async () => {
    await fixture?.close();
    await receiver?.close();
  });

  const api = (method: string, path: string, body?: unknown) =>
    fixture.harness.call(method, path, { account: ACCOUNT, ...(body ? { body } : {}) });

  it("shows the endpoint failing, finds an event by filters and search, retries one and recovers the rest, with progress that matches the ledger", async () => {
    const hook = (await api("POST", "/v3/webhooks", { url: `${receiver.url}/failing`, events: ["*"] })).body;
    const debts: Array<{ id: string }> = [];
    for (let i = 0; i < 4; i++) {
      debts.push((await api("POST", "/v3/payment-debts", { amount: `${10 + i}.00`, currency: "EUR" })).body);
    }
    await api("POST", `/v3/webhooks/${hook.id}/test`);
    await fixture.harness.settled();
    const log = () => api("GET", `/v3/webhooks/${hook.id}/dispatches?limit=100`).then((r) => r.body.data as any[]);
    const exhausted = await eventually(log, (rows) => rows.length === 5 && rows.every((d) => d.status === "exhausted"));
    // Which event is about which debt, from each delivery's body.
    const eventOf = new Map<string, string>();
    for (const row of exhausted) {
      const detail = (await api("GET", `/v3/webhook-dispatches/${row.id}`)).body;
      eventOf.set(detail.payload.data.id, row.event.id);
    }
    const [first, second, third, fourth] = debts.map((d) => eventOf.get(d.id)!);

    const page = await fixture.page();
    await fixture.signIn(page, ACCOUNT);
    // The list says what the rollups say: failing, not a green "active" (4 debts × 6 attempts; the test event's
    // attempts count toward nothing).
    const row = page.getByRole("row").filter({ hasText: hook.id });
    expect(await row.locator('td[data-label="Health"]').innerText()).toMatch(/^failing\s+0 % of 24 attempts$/);
    await screenshot(page, "2-webhook-failing");

    await row.getByRole("link").first().click();
    // The webhook's page shows the API's health: failure rate, last error, breaker.
    const health = (await api("GET", `/v3/webhooks/${hook.id}/health`)).body;
    expect(health).toMatchObject({ verdict: "failing", attempts: 24, successRate: 0 });
    const facts = await page.locator("dl.facts", { hasText: "Circuit breaker" }).innerText();
    expect(facts).toContain("24 attempts, 0 % succeeded");
    expect(facts).toContain(health.lastError);
    expect(facts).toMatch(new RegExp(`Circuit breaker\\s+${health.breaker.state}`));
    await page.getByLabel("Status").selectOption("exhausted");
    await page.getByLabel("Event type").selectOption("payment-debt.created");
    await page.getByRole("button", { name: "Apply" }).click();
    expect(await page.getByRole("row").count()).toBe(5); // the header and four debts
    expect(await page.getByRole("status").innerText()).toContain(
      "status = exhausted, eventType = payment-debt.created",
    );

    await page.getByLabel("Event or resource id").fill(second!);
    await page.getByRole("button", { name: "Apply" }).click();
    expect(await page.getByRole("row").count()).toBe(2);
    expect(await page.getByRole("row").nth(1).innerText()).toContain(second);
    await page.getByLabel("Event or resource id").fill(debts[2]!.id);
    await page.getByRole("button", { name: "Apply" }).click();
    expect(await page.getByRole("row").count()).toBe(2);
    expect(await page.getByRole("row").nth(1).innerText()).toContain(third);
    await screenshot(page, "2-search-by-resource-id");

    // The endpoint is back, but for one event it still refuses.
    healthy = true;
    stubborn = fourth!;
    await page.getByLabel("Event or resource id").fill(first!);
    await page.getByRole("button", { name: "Apply" }).click();
    await page.getByRole("button", { name: `Retry now ${first}` }).click();
    expect(await page.getByRole("status").first().innerText()).toBe(`Retry of ${first} queued as run 2.`);
    await eventually(
      () => api("GET", `/v3/webhooks/${hook.id}/dispatches?eventId=${first}`).then((r) => r.body.data[0]),
      (d) => d.status === "success" && d.run === 2,
    );

    await page.getByLabel("Start every failed and exhausted delivery of the last").selectOption("1");
    await page.getByRole("button", { name: "Start recovery" }).click();
    await page.waitForURL(/\/recoveries\/whr_/);
    const recoveryId = page.url().split("/").pop()!;
    // The page refreshes itself until every delivery it started again has ended.
    const seen: string[] = [];
    page.on(
      "load",
      () =>
        void page
          .locator("p[role=status]")
          .innerText()
          .then(
            (t) => seen.push(t),
            () => {},
          ),
    );
    await page.locator("#recovery-state", { hasText: "Finished." }).waitFor({ timeout: 60_000 });
    await screenshot(page, "2-recovery-finished");
    const shown = async (id: string) => Number(await page.locator(`#recovery-${id}`).innerText());
    const progress = {
      total: await shown("total"),
      requeued: await shown("requeued"),
      delivered: await shown("delivered"),
      failed: await shown("failed"),
      inFlight: await shown("in-flight"),
    };
    expect(progress).toEqual({ total: 4, requeued: 4, delivered: 3, failed: 1, inFlight: 0 });
    // The ledger agrees: the recovery's own counters, and every dispatch's end.
    const recovery = (await api("GET", `/v3/webhooks/${hook.id}/recoveries/${recoveryId}`)).body;
    expect(recovery).toMatchObject({ status: "completed", total: 4, requeued: 4, delivered: 3, failed: 1 });
    const end = await log();
    expect(end.filter((d) => d.status === "success").length).toBe(4);
    expect(end.filter((d) => d.status === "exhausted").map((d) => d.event.id)).toEqual([fourth]);
    expect(end.filter((d) => d.status === "pending" || d.status === "error")).toEqual([]);
    // No page before the end called it finished.
    for (const text of seen.slice(0, -1)) expect(text).not.toContain("Finished.");
  });
});
