import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HARNESS_START_MS } from "../support/harness.ts";
import { hasChromium, startBrowserFixture, type BrowserFixture } from "../support/browser.ts";

const ACCOUNT = "acc_browser_headers";
const SECRET_VALUE = "Bearer console-hdr-secret-51d0";

describe.skipIf(!hasChromium())("the console shows a webhook's own headers, never a secret one's value", () => {
  let fixture: BrowserFixture;

  beforeAll(async () => {
    fixture = await startBrowserFixture();
    await fixture.harness.accounts(ACCOUNT);
  }, HARNESS_START_MS);
  afterAll(async () => {
    await fixture?.close();
  });

  it("names both on the webhook page and shows only the plain value, there and on its edit page", async () => {
    const created = await fixture.harness.call("POST", "/v3/webhooks", {
      account: ACCOUNT,
      body: {
        url: "https://hooks.example.com/in",
        events: ["payment-debt.created"],
        headers: { "X-Team": "billing", Authorization: { value: SECRET_VALUE, secret: true } },
      },
    });
    expect(created.status, created.text).toBe(201);
    const page = await fixture.page();
    await fixture.signIn(page, ACCOUNT);
    await page.goto(`${fixture.origin}/console/webhooks/${created.body.id}`);
    const facts = await page.locator("dl.facts").first().innerText();
    expect(facts).toMatch(/Headers\s+X-Team: billing\s+Authorization: \(secret, not shown\)/);
    expect(await page.content()).not.toContain("hdr-secret");
    await page.goto(`${fixture.origin}/console/webhooks/${created.body.id}/edit`);
    expect(await page.content()).not.toContain("hdr-secret");
  });
});
