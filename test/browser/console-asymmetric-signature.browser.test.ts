import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HARNESS_START_MS } from "../support/harness.ts";
import { hasChromium, seriousViolations, startBrowserFixture, type BrowserFixture } from "../support/browser.ts";

const ACCOUNT = "acc_browser_asymmetric";
const BOX = "Also sign with the account's ed25519 key (v1a), verifiable without a secret";

describe.skipIf(!hasChromium())("the console turns a webhook's ed25519 (v1a) signature on and off", () => {
  let fixture: BrowserFixture;

  beforeAll(async () => {
    fixture = await startBrowserFixture();
    await fixture.harness.accounts(ACCOUNT);
  }, HARNESS_START_MS);
  afterAll(async () => {
    await fixture?.close();
  });

  const stored = async (id: string) =>
    (await fixture.harness.call("GET", `/v3/webhooks/${id}`, { account: ACCOUNT })).body as {
      scheme: string;
      asymmetricSignature: boolean;
    };
  const box = (page: Page) => page.getByLabel(BOX);
  const scheme = (page: Page) => page.getByLabel("Signature scheme");
  const facts = (page: Page) => page.locator("dl.facts").first();

  it("creates one that signs v1a, links its key set, refuses it with hooklane-v1, and unticks it", async () => {
    const page = await fixture.page();
    await fixture.signIn(page, ACCOUNT);
    await page.goto(`${fixture.origin}/console/webhooks/new`);
    expect(await box(page).isChecked()).toBe(false);
    await page.getByLabel("Endpoint URL").fill("https://example.com/v1a");
    await page.getByLabel("payment-debt.created").check();
    await scheme(page).selectOption("standard-webhooks");
    await box(page).check();
    expect(await seriousViolations(page)).toEqual([]);
    await page.getByRole("button", { name: "Create webhook" }).click();
    await page.getByRole("link", { name: "Continue to the webhook" }).click();

    const id = /\/webhooks\/([^/?]+)$/.exec(new URL(page.url()).pathname)![1]!;
    expect(await stored(id)).toMatchObject({ scheme: "standard-webhooks", asymmetricSignature: true });
    const keysPath = `/webhook-keys/${ACCOUNT}/jwks.json`;
    expect(await facts(page).locator("dt", { hasText: "Public keys" }).count()).toBe(1);
    const link = facts(page).getByRole("link", { name: keysPath, exact: true });
    expect(await link.getAttribute("href")).toBe(keysPath);
    const keySet = await page.request.get(new URL(keysPath, fixture.origin).href);
    expect(keySet.status()).toBe(200);
    const keys = (await keySet.json()) as { keys: Array<{ kty: string; crv: string }> };
    expect(keys.keys).toHaveLength(1);
    expect(keys.keys[0]).toMatchObject({ kty: "OKP", crv: "Ed25519" });

    // hooklane-v1 with the box ticked: the API's refusal, the form as typed.
    await page.getByRole("link", { name: "Edit" }).click();
    expect(await scheme(page).inputValue()).toBe("standard-webhooks");
    expect(await box(page).isChecked()).toBe(true);
    await page.getByLabel("Description").fill("kept as typed");
    await scheme(page).selectOption("hooklane-v1");
    await page.getByRole("button", { name: "Save changes" }).click();
    expect(await page.getByRole("alert").innerText()).toBe(
      "asymmetricSignature: ed25519 signatures (v1a) are Standard Webhooks': set `scheme` to `standard-webhooks` with them",
    );
    expect(await scheme(page).inputValue()).toBe("hooklane-v1");
    expect(await box(page).isChecked()).toBe(true);
    expect(await page.getByLabel("Description").inputValue()).toBe("kept as typed");
    expect(await stored(id)).toMatchObject({ scheme: "standard-webhooks", asymmetricSignature: true });

    // Unticked: saved, and the key set is no longer linked.
    await box(page).uncheck();
    await page.getByRole("button", { name: "Save changes" }).click();
    await page.waitForURL(`${fixture.origin}/console/webhooks/${id}?notice=Changes%20saved.`);
    expect(await stored(id)).toMatchObject({ scheme: "hooklane-v1", asymmetricSignature: false });
    expect(await facts(page).locator("dt", { hasText: "Public keys" }).count()).toBe(0);
    expect(await facts(page).innerText()).toContain("Description\nkept as typed");
  });
});
