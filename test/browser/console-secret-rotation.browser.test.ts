import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HARNESS_START_MS } from "../support/harness.ts";
import {
  hasChromium,
  screenshot,
  seriousViolations,
  startBrowserFixture,
  type BrowserFixture,
} from "../support/browser.ts";

const ACCOUNT = "acc_browser_rotation";
const OVERLAP_LINE = "The previous secret also signs until";
const STOPPED = "The previous secret no longer signs: deliveries carry only the current secret's signature.";

/** An ISO time as the console writes a deadline: to the minute, in UTC. */
const clock = (iso: string) => `${iso.slice(0, 16).replace("T", " ")} UTC`;

describe.skipIf(!hasChromium())("the console in a browser: rotating a secret with a grace", () => {
  let fixture: BrowserFixture;

  beforeAll(async () => {
    fixture = await startBrowserFixture();
  }, HARNESS_START_MS);
  afterAll(async () => {
    await fixture?.close();
  });

  const api = (method: string, path: string) => fixture.harness.call(method, path, { account: ACCOUNT });

  it("keeps the old secret signing for the grace chosen, says until when, stops it on demand, and audits each step", async () => {
    const page = await fixture.page();
    await fixture.signIn(page, ACCOUNT);
    const hook = await fixture.harness.call("POST", "/v3/webhooks", {
      account: ACCOUNT,
      body: { url: "https://hooks.example.com/rotation", events: ["*"] },
    });
    const id = hook.body.id as string;
    await page.goto(`${fixture.origin}/console/webhooks/${id}`);
    const overlap = page.getByText(OVERLAP_LINE);
    const stop = page.getByRole("button", { name: "Stop the previous secret now" });
    const grace = page.getByLabel("Keep the old secret signing for");

    // A new webhook has one secret; the choice offered starts at the API's default.
    expect(await overlap.count()).toBe(0);
    expect(await stop.count()).toBe(0);
    expect(await grace.locator("option").allInnerTexts()).toEqual([
      "none — stop it now (a leak)",
      "1 hour",
      "2 hours",
      "24 hours (default)",
      "7 days",
    ]);
    expect(await grace.inputValue()).toBe("86400");

    // A planned switch: 2 h. The secret's page and then the webhook's say until when the old one signs.
    await grace.selectOption({ label: "2 hours" });
    const before = Date.now();
    await page.getByRole("button", { name: "Rotate secret" }).click();
    expect(await page.getByRole("heading", { level: 1 }).innerText()).toBe("Secret rotated");
    const expires = (await api("GET", `/v3/webhooks/${id}`)).body.previousSecretExpires as string;
    expect(Date.parse(expires)).toBeGreaterThanOrEqual(before + 7_200_000 - 5_000);
    expect(Date.parse(expires)).toBeLessThanOrEqual(Date.now() + 7_200_000 + 5_000);
    expect(await page.getByRole("alert").innerText()).toBe(
      "Copy this signing secret now: it is shown only this once, and only its encrypted form is kept. " +
        `The previous secret keeps signing alongside it until ${clock(expires)} (in 2 hours).`,
    );
    await page.getByRole("link", { name: "Continue to the webhook" }).click();
    expect(await overlap.innerText()).toBe(`${OVERLAP_LINE} ${clock(expires)} (in 2 hours).`);
    expect(await overlap.locator("time").getAttribute("datetime")).toBe(expires);
    await screenshot(page, "rotation-overlap");
    expect(await seriousViolations(page)).toEqual([]);

    // Ended early: the line goes, a notice says so, and the API agrees.
    await stop.click();
    await page.waitForURL(/\/console\/webhooks\/wh_[^/]+\?notice=/);
    expect(await page.getByRole("status").first().innerText()).toBe(STOPPED);
    expect(await overlap.count()).toBe(0);
    expect(await stop.count()).toBe(0);
    expect((await api("GET", `/v3/webhooks/${id}`)).body.previousSecretExpires).toBeNull();

    // A leak: no grace. The old secret stops at once, so there is no overlap to show.
    await grace.selectOption({ label: "none — stop it now (a leak)" });
    await page.getByRole("button", { name: "Rotate secret" }).click();
    expect(await page.getByRole("alert").innerText()).toBe(
      "Copy this signing secret now: it is shown only this once, and only its encrypted form is kept. " +
        "The previous secret no longer signs.",
    );
    await page.getByRole("link", { name: "Continue to the webhook" }).click();
    expect(await overlap.count()).toBe(0);
    expect(await stop.count()).toBe(0);
    expect((await api("GET", `/v3/webhooks/${id}`)).body.previousSecretExpires).toBeNull();

    // Each step is audited, oldest first, with the grace it was given.
    const audit = await api("GET", `/v3/audit-log?target=${id}&limit=100`);
    expect(audit.status, audit.text).toBe(200);
    const steps = (audit.body.data as Array<{ action: string; detail: unknown }>)
      .filter((entry) => entry.action.includes("secret"))
      .reverse()
      .map((entry) => [entry.action, entry.detail]);
    expect(steps).toEqual([
      ["webhook.secret-rotated", { graceSeconds: 7_200 }],
      ["webhook.previous-secret-expired", {}],
      ["webhook.secret-rotated", { graceSeconds: 0 }],
    ]);
  });
});
