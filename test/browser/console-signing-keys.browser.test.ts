import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
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

const ACCOUNT = "acc_browser_keys";
const OTHER = "acc_browser_keys_other";
const DAY_MS = 86_400_000;

interface Key {
  id: string;
  account: string | null;
  signsFrom: string;
  publishedUntil: string | null;
  created: string;
}

/** An ISO time as the console writes it: to the minute, in UTC. */
const clock = (iso: string) => `${iso.slice(0, 16).replace("T", " ")} UTC`;
const plus = (iso: string, ms: number) => new Date(Date.parse(iso) + ms).toISOString();

describe.skipIf(!hasChromium())("the console rotates the ed25519 signing keys (v1a)", () => {
  let fixture: BrowserFixture;

  beforeAll(async () => {
    fixture = await startBrowserFixture();
    await fixture.harness.accounts(ACCOUNT, OTHER);
  }, HARNESS_START_MS);
  afterAll(async () => {
    await fixture?.close();
  });

  const api = (account: string, method: string, path: string, body?: unknown) =>
    fixture.harness.call(method, path, { account, ...(body ? { body } : {}) });
  const keysOf = async (account: string) =>
    (await api(account, "GET", "/v3/webhook-signing-keys?limit=100")).body.data as Key[];
  /** A webhook that signs v1a: its account's first key comes with it. */
  const signingWebhook = async (account: string) => {
    const made = await api(account, "POST", "/v3/webhooks", {
      url: `https://hooks.example.com/${account}`,
      events: ["*"],
      scheme: "standard-webhooks",
      asymmetricSignature: true,
    });
    expect(made.status, made.text).toBe(201);
    return made.body.id as string;
  };
  const keySet = async (page: Page, account: string) => {
    const answer = await page.request.get(`${fixture.origin}/webhook-keys/${account}/jwks.json`);
    expect(answer.status()).toBe(200);
    return ((await answer.json()) as { keys: Array<{ kid: string }> }).keys.map((key) => key.kid);
  };
  const row = (page: Page, id: string) => page.locator(`tr[id="${id}"]`);
  const cell = (page: Page, id: string, label: string) =>
    row(page, id).locator(`td[data-label="${label}"]`).innerText();
  const notice = (page: Page) => page.locator("p.notice[role=status]").innerText();

  it("shows the keys with their state, rotates with a grace and at once for a leak, audits both, and only ever the caller's", async () => {
    const webhook = await signingWebhook(ACCOUNT);
    await signingWebhook(OTHER);
    const [first] = await keysOf(ACCOUNT);
    const [theirs] = await keysOf(OTHER);

    // From the webhook's public keys to the account's keys.
    const page = await fixture.page();
    await fixture.signIn(page, ACCOUNT);
    expect(
      await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Signing keys" }).count(),
    ).toBe(1);
    await page.goto(`${fixture.origin}/console/webhooks/${webhook}`);
    await page.getByRole("link", { name: "Signing keys and rotation" }).click();
    await page.waitForURL(`${fixture.origin}/console/signing-keys`);
    expect(await page.getByRole("heading", { level: 1 }).innerText()).toBe("Signing keys");
    const jwks = `${fixture.origin}/webhook-keys/${ACCOUNT}/jwks.json`;
    expect(await page.getByRole("link", { name: jwks, exact: true }).getAttribute("href")).toBe(jwks);
    expect(await page.locator("tbody tr").count()).toBe(1);
    expect(await cell(page, first!.id, "Key")).toBe(first!.id);
    expect(await cell(page, first!.id, "Status")).toBe("signing");
    expect(await cell(page, first!.id, "Signs from")).toContain(clock(first!.signsFrom));
    expect(await cell(page, first!.id, "Published until")).toBe("while newest");
    const grace = page.getByLabel("Keep the replaced keys published for");
    expect(await grace.locator("option").allInnerTexts()).toEqual([
      "none — they leave when the new key starts signing",
      "1 hour (default)",
      "24 hours",
      "7 days",
    ]);
    expect(await grace.inputValue()).toBe("3600");
    expect(await seriousViolations(page)).toEqual([]);

    // A planned rotation, 24 h of grace: the new key is published now and signs 5 minutes on; the old one signs
    // until then and stays published 24 h after it.
    await grace.selectOption({ label: "24 hours" });
    await page.getByRole("button", { name: "Rotate key" }).click();
    await page.waitForURL(/\/console\/signing-keys\?notice=/);
    const [next, old] = await keysOf(ACCOUNT);
    expect(old!.id).toBe(first!.id);
    expect(old!.publishedUntil).toBe(plus(next!.signsFrom, DAY_MS));
    expect(Date.parse(next!.signsFrom) - Date.parse(next!.created)).toBe(300_000);
    expect(await notice(page)).toBe(
      `New key ${next!.id} signs from ${clock(next!.signsFrom)} (in 5 minutes); receivers have it in the key set first. ` +
        `The keys it replaces stay published until ${clock(old!.publishedUntil!)} (tomorrow), so what they signed verifies until then.`,
    );
    expect(await page.locator("tbody tr").count()).toBe(2);
    expect(await cell(page, next!.id, "Status")).toBe(`next: signs at ${clock(next!.signsFrom)} (in 5 minutes)`);
    expect(await cell(page, next!.id, "Published until")).toBe("while newest");
    const retiring = await cell(page, old!.id, "Status");
    expect(retiring).toContain(`signing until ${clock(next!.signsFrom)}`);
    expect(retiring).toContain(`then retiring until ${clock(plus(next!.signsFrom, DAY_MS))}`);
    expect(await cell(page, old!.id, "Published until")).toContain(clock(plus(next!.signsFrom, DAY_MS)));
    const both = [next!.id, old!.id].sort();
    await eventually(
      () => keySet(page, ACCOUNT),
      (kids) => JSON.stringify([...kids].sort()) === JSON.stringify(both),
      { everyMs: 500 },
    );
    await screenshot(page, "signing-keys-rotating");
    expect(await seriousViolations(page)).toEqual([]);

    // Leaked: the new key signs at once, and every other key leaves the key set now.
    await page.getByRole("button", { name: "Key leaked: replace it now" }).click();
    await page.waitForURL(/\/console\/signing-keys\?notice=/);
    const [fresh, ...others] = await keysOf(ACCOUNT);
    expect(others.map((key) => key.id)).toEqual([next!.id, old!.id]);
    expect(await notice(page)).toBe(
      `New key ${fresh!.id} signs now. The keys it replaces have left the key set: what they signed no longer verifies.`,
    );
    expect(await page.locator("tbody tr").count()).toBe(3);
    expect(await cell(page, fresh!.id, "Status")).toBe("signing");
    expect(await cell(page, fresh!.id, "Published until")).toBe("while newest");
    for (const key of others) {
      expect(await cell(page, key.id, "Status")).toBe("retired");
      expect(Date.parse(key.publishedUntil!)).toBeLessThanOrEqual(Date.parse(fresh!.signsFrom));
    }
    // Each process reads a key set at most every 10 s: the withdrawn keys are gone from it by then.
    await eventually(
      () => keySet(page, ACCOUNT),
      (kids) => kids.length === 1 && kids[0] === fresh!.id,
      { everyMs: 500 },
    );
    expect(await seriousViolations(page)).toEqual([]);
    const phone = await fixture.page({ width: 375 });
    await fixture.signIn(phone, ACCOUNT);
    await phone.goto(`${fixture.origin}/console/signing-keys`);
    const { scrollWidth, clientWidth } = await widths(phone);
    expect(scrollWidth).toBeLessThanOrEqual(clientWidth);
    expect(await seriousViolations(phone)).toEqual([]);

    // Both rotations are audited with their grace.
    const audit = await api(ACCOUNT, "GET", "/v3/audit-log?limit=100");
    expect(audit.status, audit.text).toBe(200);
    const rotations = (audit.body.data as Array<{ action: string; target: string; detail: Record<string, unknown> }>)
      .filter((entry) => entry.action === "webhook-signing-key.rotated")
      .reverse()
      .map((entry) => [entry.target, entry.detail.graceSeconds, entry.detail.immediate]);
    expect(rotations).toEqual([
      [next!.id, 86_400, false],
      [fresh!.id, 0, true],
    ]);

    // Another account's user sees their own key only, and their rotation leaves this account's keys alone.
    const other = await fixture.page();
    await fixture.signIn(other, OTHER);
    await other.goto(`${fixture.origin}/console/signing-keys`);
    expect(await other.locator("tbody tr").count()).toBe(1);
    expect(await cell(other, theirs!.id, "Status")).toBe("signing");
    const shown = await other.content();
    for (const key of [fresh!, ...others]) expect(shown).not.toContain(key.id);
    expect(shown).not.toContain(`/webhook-keys/${ACCOUNT}/`);
    expect(shown).toContain(`/webhook-keys/${OTHER}/jwks.json`);
    await other.getByRole("button", { name: "Rotate key" }).click();
    await other.waitForURL(/\/console\/signing-keys\?notice=/);
    expect(await other.locator("tbody tr").count()).toBe(2);
    expect((await keysOf(ACCOUNT)).map((key) => [key.id, key.publishedUntil])).toEqual(
      [fresh!, ...others].map((key) => [key.id, key.publishedUntil]),
    );
    // The global webhooks' keys are an admin's.
    const global = await other.goto(`${fixture.origin}/console/signing-keys?scope=global`);
    expect(global!.status()).toBe(403);

    // A portal session shows its own account's keys, the same way.
    const session = await api(OTHER, "POST", "/v3/portal-sessions", {
      frameAncestors: ["https://app.example.com"],
      expiresIn: 900,
    });
    const portal = await fixture.page();
    await portal.goto(`${fixture.origin}${new URL(session.body.url).pathname}/signing-keys`);
    expect(await portal.locator("tbody tr").count()).toBe(2);
    expect(await cell(portal, theirs!.id, "Status")).toContain("signing until");
    expect(await portal.content()).not.toContain(fresh!.id);
    expect(await seriousViolations(portal)).toEqual([]);
  });
});
