import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { verifyWebhook } from "../../lib/webhook/verify/webhook-verify.ts";
import { eventually } from "../support/eventually.ts";
import { HARNESS_START_MS } from "../support/harness.ts";
import { hasChromium, screenshot, startBrowserFixture, type BrowserFixture } from "../support/browser.ts";
import { startReceiver, type TestReceiver } from "../support/receiver.ts";

const ACCOUNT = "acc_browser_one";

describe.skipIf(!hasChromium())("the console in a browser: a webhook's life", () => {
  let fixture: BrowserFixture;
  let receiver: TestReceiver;

  beforeAll(async () => {
    receiver = await startReceiver(() => ({ status: 200, body: "thanks, got it" }));
    fixture = await startBrowserFixture();
  }, HARNESS_START_MS);
  afterAll(async () => {
    await fixture?.close();
    await receiver?.close();
  });

  const api = (method: string, path: string) => fixture.harness.call(method, path, { account: ACCOUNT });

  it("signs in, creates a webhook, shows its secret once, sends a test event and shows the attempt in full", async () => {
    const page = await fixture.page();
    await fixture.signIn(page, ACCOUNT);
    await page.getByRole("link", { name: "New webhook" }).click();
    await page.getByLabel("Endpoint URL").fill(`${receiver.url}/hooks`);
    await page.getByLabel("Description").fill("orders sync");
    await page.getByLabel("All events (*)").check();
    await page.getByRole("button", { name: "Create webhook" }).click();

    await screenshot(page, "1-secret-shown-once");
    const secret = (await page.locator("#secret").textContent())!.trim();
    expect(secret).toMatch(/^whsec_/);
    // The secret's page came by a redirect: reloading it creates nothing and shows the secret no more.
    await page.reload();
    expect(await page.getByRole("heading", { level: 1 }).innerText()).toBe("Secret already shown");
    expect(await page.content()).not.toContain(secret);
    const mine = (await api("GET", "/v3/webhooks?limit=100")).body.data.filter(
      (w: { url: string }) => w.url === `${receiver.url}/hooks`,
    );
    expect(mine).toHaveLength(1);
    await page.getByRole("link", { name: "Continue to the webhook" }).click();
    const webhookId = page.url().split("/").pop()!;
    expect(webhookId).toBe(mine[0].id);
    expect((await api("GET", `/v3/webhooks/${webhookId}`)).body).toMatchObject({
      url: `${receiver.url}/hooks`,
      description: "orders sync",
      status: "active",
    });
    // Shown once: nowhere on the webhook's page or the list.
    expect(await page.content()).not.toContain(secret);
    await page.goto(`${fixture.origin}/console`);
    expect(await page.content()).not.toContain(secret);
    await page.getByRole("link", { name: `${receiver.url}/hooks` }).click();

    await page.getByRole("button", { name: "Send test event" }).click();
    await page.waitForURL(/\/console\/dispatches\/wd_/);
    const dispatchId = page.url().split("/").pop()!.split("?")[0]!;
    const [post] = await receiver.waitFor(1);
    // The request really was signed with the secret the page showed.
    const verified = await verifyWebhook({ payload: post!.body, headers: post!.headers as never, secret });
    await eventually(
      () => api("GET", `/v3/webhook-dispatches/${dispatchId}`).then((r) => r.body.status),
      (status) => status === "success",
    );
    await page.reload();
    await screenshot(page, "1-delivery-detail");

    const attempt = page.getByRole("region", { name: "Run 1, attempt 1" });
    expect(await attempt.getByRole("heading", { level: 3 }).innerText()).toBe("Run 1, attempt 1: success");
    const facts = await attempt.locator("dl").innerText();
    expect(facts).toMatch(/Response status\s+200/);
    expect(facts).toMatch(/Duration\s+\d+ ms/);
    const headers = await attempt.locator("pre").first().innerText();
    expect(headers).toContain(`Hooklane-Event-Id: ${verified.event.id}`);
    expect(headers).toContain("Hooklane-Attempt: 1");
    expect(headers).toContain(`Hooklane-Signature: t=${verified.timestamp},v1=[redacted]`);
    // The signature's value itself is never shown.
    const signature = String(post!.headers["hooklane-signature"]).split("v1=")[1]!;
    expect(await page.content()).not.toContain(signature);
    expect(await page.getByLabel("Response excerpt").innerText()).toBe("thanks, got it");
    const body = JSON.parse(await page.getByLabel("Request body").innerText());
    expect(body).toEqual(JSON.parse(post!.body));
    expect(body.type).toBe("webhook.test");
  });

  it("pauses, resumes, rotates the secret and deletes from the console, each reflected by the API", async () => {
    const hook = await fixture.harness.call("POST", "/v3/webhooks", {
      account: ACCOUNT,
      body: { url: `${receiver.url}/lifecycle`, events: ["*"] },
    });
    const id = hook.body.id as string;
    const page = await fixture.page();
    await fixture.signIn(page, ACCOUNT);
    await page.goto(`${fixture.origin}/console/webhooks/${id}`);

    await page.getByRole("button", { name: "Pause deliveries" }).click();
    expect(await page.getByRole("status").first().innerText()).toContain("Deliveries paused");
    expect((await api("GET", `/v3/webhooks/${id}`)).body.status).toBe("paused");
    await screenshot(page, "3-paused");

    await page.getByRole("button", { name: "Resume deliveries" }).click();
    expect(await page.getByRole("status").first().innerText()).toContain("Deliveries resumed");
    expect((await api("GET", `/v3/webhooks/${id}`)).body.status).toBe("active");

    await page.getByRole("button", { name: "Rotate secret" }).click();
    const rotated = (await page.locator("#secret").textContent())!.trim();
    expect(rotated).toMatch(/^whsec_/);
    expect(rotated).not.toBe(hook.body.secret);
    await screenshot(page, "3-secret-rotated");
    const after = (await api("GET", `/v3/webhooks/${id}`)).body;
    expect(after.previousSecretExpires).not.toBeNull();
    // The API signs with the secret the page showed (and the previous one during its grace period).
    const test = await api("POST", `/v3/webhooks/${id}/test`);
    expect(test.status).toBe(202);
    const [post] = await receiver.waitFor(1, { filter: (p) => p.path === "/lifecycle" });
    await verifyWebhook({ payload: post!.body, headers: post!.headers as never, secret: rotated });
    expect(String(post!.headers["hooklane-signature"]).match(/v1=/g)).toHaveLength(2);

    // Reloading the rotation's page rotates nothing: one audit entry, the same secret still signs.
    await page.reload();
    expect(await page.getByRole("heading", { level: 1 }).innerText()).toBe("Secret already shown");
    const audit = await api("GET", `/v3/audit-log?target=${id}&limit=100`);
    const rotations = audit.body.data.filter((e: { action: string }) => e.action === "webhook.secret-rotated");
    expect(rotations).toHaveLength(1);
    expect((await api("GET", `/v3/webhooks/${id}`)).body.previousSecretExpires).toBe(after.previousSecretExpires);

    await page.getByRole("link", { name: "Continue to the webhook" }).click();
    await page.getByRole("link", { name: "Delete…" }).click();
    await page.getByRole("button", { name: "Delete this webhook" }).click();
    await page.waitForURL(/\/console\?notice=/);
    expect(await page.getByRole("status").first().innerText()).toContain(`Webhook ${id} deleted.`);
    expect((await api("GET", `/v3/webhooks/${id}`)).status).toBe(404);
    expect(await page.content()).not.toContain(`/console/webhooks/${id}"`);
  });

  it("keeps every field when a form is refused, and offers only the events an account webhook can hear", async () => {
    const page = await fixture.page();
    await fixture.signIn(page, ACCOUNT);
    await page.goto(`${fixture.origin}/console/webhooks/new`);
    const offered = await page
      .locator('input[name="events"]')
      .evaluateAll((boxes) => boxes.map((box) => box.getAttribute("value")));
    expect(offered).toContain("payment-debt.created");
    for (const globalOnly of ["payment-debt.purged", "subscription.purged", "general.address.created"]) {
      expect(offered).not.toContain(globalOnly);
    }
    // The API refuses a special-use domain: the form comes back as it was sent, with the reason.
    await page.getByLabel("Endpoint URL").fill("https://hooks.acme.invalid/in");
    await page.getByLabel("Description").fill("kept on refusal");
    await page.getByLabel("payment-debt.created").check();
    await page.getByLabel("subscription.updated").check();
    await page.getByLabel("Signature scheme").selectOption("standard-webhooks");
    await page.getByRole("button", { name: "Create webhook" }).click();
    expect(await page.getByRole("alert").innerText()).toContain(".invalid is a special-use");
    expect(await page.getByLabel("Endpoint URL").inputValue()).toBe("https://hooks.acme.invalid/in");
    expect(await page.getByLabel("Description").inputValue()).toBe("kept on refusal");
    expect(await page.getByLabel("payment-debt.created").isChecked()).toBe(true);
    expect(await page.getByLabel("subscription.updated").isChecked()).toBe(true);
    expect(await page.getByLabel("payment-debt.updated").isChecked()).toBe(false);
    expect(await page.getByLabel("Signature scheme").inputValue()).toBe("standard-webhooks");
    await screenshot(page, "4-refused-form-kept");
    // Corrected, it is created with what was kept.
    await page.getByLabel("Endpoint URL").fill(`${receiver.url}/kept`);
    await page.getByRole("button", { name: "Create webhook" }).click();
    expect(await page.getByRole("heading", { level: 1 }).innerText()).toBe("Webhook created");
    const created = (await api("GET", "/v3/webhooks?limit=100")).body.data.find(
      (w: { url: string }) => w.url === `${receiver.url}/kept`,
    );
    expect(created).toMatchObject({
      description: "kept on refusal",
      events: ["payment-debt.created", "subscription.updated"],
      scheme: "standard-webhooks",
    });
  });
});
