import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Page } from "playwright-core";
import { eventually } from "../support/eventually.ts";
import { HARNESS_START_MS } from "../support/harness.ts";
import {
  hasChromium,
  screenshot,
  seriousViolations,
  startBrowserFixture,
  widths,
  type BrowserFixture,
} from "../support/browser.ts";
import { startReceiver, type TestReceiver } from "../support/receiver.ts";

const ACCOUNT = "acc_browser_live";

/** The page was not reloaded since `mark`: the value it set in the page's own window is still there. */
const mark = (page: Page) => page.evaluate(`window.__notReloaded = true`);
const stillTheSamePage = (page: Page) => page.evaluate(`window.__notReloaded === true`);

describe.skipIf(!hasChromium())("the console keeps itself current, without reloading", () => {
  let fixture: BrowserFixture;
  let receiver: TestReceiver;
  let answer = 503;

  beforeAll(async () => {
    receiver = await startReceiver(() => ({ status: answer, body: `answered ${answer}` }));
    // Six attempts a second apart: a failing delivery is exhausted in ~5 s, a retried one succeeds within a second.
    fixture = await startBrowserFixture({ WEBHOOK_RETRY_SCHEDULE: "1s,1s,1s,1s,1s" });
    await fixture.harness.accounts(ACCOUNT);
  }, HARNESS_START_MS);
  afterAll(async () => {
    await fixture?.close();
    await receiver?.close();
  });

  const api = (method: string, path: string, body?: unknown) =>
    fixture.harness.call(method, path, { account: ACCOUNT, ...(body ? { body } : {}) });

  it("a delivery's page shows its retry succeed; a recovery's page runs to its end, and the webhook links to it", async () => {
    answer = 503;
    const hook = (await api("POST", "/v3/webhooks", { url: `${receiver.url}/live`, events: ["*"] })).body;
    const page = await fixture.page();
    await fixture.signIn(page, ACCOUNT);

    // A delivery failing now: its page follows it to success once the endpoint answers 200.
    const test = (await api("POST", `/v3/webhooks/${hook.id}/test`)).body;
    await eventually(
      () => api("GET", `/v3/webhook-dispatches/${test.id}`).then((r) => r.body.status),
      (status) => status === "error",
    );
    await page.goto(`${fixture.origin}/console/dispatches/${test.id}`);
    expect(await page.locator('meta[http-equiv="refresh"]').count()).toBe(0);
    expect(await page.locator("#delivery-state").innerText()).toMatch(/Status\s+error/);
    await mark(page);
    answer = 200;
    await page.locator("#delivery-state").getByText("success", { exact: true }).waitFor({ timeout: 15_000 });
    expect(await page.getByRole("region", { name: /attempt \d+$/ }).count()).toBeGreaterThan(1);
    expect(await page.locator("#delivery-state[data-live]").count()).toBe(0); // ended: it stopped asking
    expect(await stillTheSamePage(page)).toBe(true);
    await screenshot(page, "8-live-delivery-succeeded");

    // Three real events exhausted against a failing endpoint, then recovered.
    answer = 503;
    for (let i = 0; i < 3; i++) {
      await api("POST", "/v3/payment-debts", { amount: `${i + 1}.00`, currency: "EUR" });
    }
    await eventually(
      () => api("GET", `/v3/webhooks/${hook.id}/dispatches?status=exhausted`).then((r) => r.body.data.length),
      (n) => n === 3,
      { timeoutMs: 30_000 },
    );
    // Paused, so the recovery's deliveries wait (and its page says why) until it is resumed.
    await api("PATCH", `/v3/webhooks/${hook.id}`, { status: "paused" });
    await page.goto(`${fixture.origin}/console/webhooks/${hook.id}`);
    await page.getByRole("button", { name: "Start recovery" }).click();
    await page.waitForURL(/\/recoveries\/whr_/);
    const recoveryUrl = page.url();
    await page
      .locator("#recovery-progress")
      .getByText(/Requeued 3 of 3/)
      .waitFor({ timeout: 15_000 });
    expect(await page.locator("#recovery-state").innerText()).not.toBe("Finished.");
    expect(await page.locator("#recovery-progress").innerText()).toContain("Deliveries wait: the webhook is paused.");
    expect(await page.locator('meta[http-equiv="refresh"]').count()).toBe(0);
    // The running recovery, checked by axe at both widths before it ends.
    const running: string[] = [];
    for (const width of [1280, 375]) {
      const look = await fixture.page({ width });
      await fixture.signIn(look, ACCOUNT);
      await look.goto(recoveryUrl);
      expect(await look.locator("#recovery-state").innerText()).not.toBe("Finished.");
      running.push(...(await seriousViolations(look)).map((v) => `${width}: ${v}`));
      const { scrollWidth, clientWidth } = await widths(look);
      if (scrollWidth > clientWidth) running.push(`${width}: scrollWidth ${scrollWidth} > ${clientWidth}`);
      await screenshot(look, `8-live-recovery-running-${width}`);
      // The webhook's page lists it as running, linked.
      await look.goto(`${fixture.origin}/console/webhooks/${hook.id}`);
      const listed = look.locator("#webhook-recoveries").getByRole("link", { name: "Running" });
      expect(await listed.getAttribute("href")).toBe(new URL(recoveryUrl).pathname);
      await look.context().close();
    }
    expect(running).toEqual([]);

    await mark(page);
    answer = 200;
    await api("PATCH", `/v3/webhooks/${hook.id}`, { status: "active" });
    await page.locator("#recovery-state").getByText("Finished.").waitFor({ timeout: 20_000 });
    expect(await page.locator("#recovery-progress").innerText()).toMatch(/delivered 3, failed again\s+0/);
    expect(await stillTheSamePage(page)).toBe(true);
    await screenshot(page, "8-live-recovery-finished");

    // The webhook's log, open on the newest page, shows the deliveries as they end, also without a reload.
    await page.goto(`${fixture.origin}/console/webhooks/${hook.id}`);
    expect(await page.locator("#webhook-recoveries").getByRole("link", { name: "Finished" }).count()).toBe(1);
    await mark(page);
    const late = (await api("POST", "/v3/payment-debts", { amount: "9.00", currency: "EUR" })).body;
    const dispatch = await eventually(
      () => api("GET", `/v3/webhooks/${hook.id}/dispatches?resourceId=${late.id}`).then((r) => r.body.data[0]),
      (found) => found !== undefined,
    );
    await page.locator("#delivery-log").getByText(dispatch.event.id).waitFor({ timeout: 25_000 });
    expect(await stillTheSamePage(page)).toBe(true);
  });
});
