import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../support/eventually.ts";
import { HARNESS_START_MS } from "../support/harness.ts";
import { hasChromium, seriousViolations, startBrowserFixture, type BrowserFixture } from "../support/browser.ts";
import { startReceiver, type TestReceiver } from "../support/receiver.ts";

const ACCOUNT = "acc_browser_order";

describe.skipIf(!hasChromium())("the console shows a webhook's ordering and what an event waits for", () => {
  let fixture: BrowserFixture;
  let receiver: TestReceiver;

  beforeAll(async () => {
    // The resource's first event fails for a while (retried every second); the second waits behind it.
    receiver = await startReceiver((post) => ({ status: JSON.parse(post.body).sequence === 1 ? 503 : 200 }));
    fixture = await startBrowserFixture({ WEBHOOK_RETRY_SCHEDULE: "1s,1s,1s,1s,1s,1s,1s,1s,1s,1s" });
    await fixture.harness.accounts(ACCOUNT);
  }, HARNESS_START_MS);
  afterAll(async () => {
    await fixture?.close();
    await receiver?.close();
  });

  const api = (method: string, path: string, body?: unknown) =>
    fixture.harness.call(method, path, { account: ACCOUNT, ...(body ? { body } : {}) });

  it("says on the webhook page that it orders per resource, and on a held delivery's page which event it waits for", async () => {
    const debt = (await api("POST", "/v3/payment-debts", { amount: "5.00", currency: "EUR" })).body;
    const hook = (
      await api("POST", "/v3/webhooks", {
        url: `${receiver.url}/ordered`,
        events: ["payment-debt.updated"],
        ordering: "resource",
      })
    ).body;
    for (const status of ["paid", "open"]) await api("PATCH", `/v3/payment-debts/${debt.id}`, { status });
    await fixture.harness.settled();
    const dispatches = await eventually(
      () =>
        api("GET", `/v3/webhooks/${hook.id}/dispatches`).then(
          (r) => r.body.data as Array<{ id: string; sequence: number }>,
        ),
      (rows) => rows.length === 2,
    );
    const first = dispatches.find((d) => d.sequence === 1)!;
    const second = dispatches.find((d) => d.sequence === 2)!;
    const detail = await eventually(
      () => api("GET", `/v3/webhook-dispatches/${second.id}`).then((r) => r.body),
      (body) => body.heldBehind !== null,
    );
    const blocker = (await api("GET", `/v3/webhook-dispatches/${first.id}`)).body;
    expect(detail.heldBehind).toBe(blocker.event.id);

    const page = await fixture.page();
    await fixture.signIn(page, ACCOUNT);
    await page.goto(`${fixture.origin}/console/webhooks/${hook.id}`);
    await expect(page.locator("dl.facts").first().innerText()).resolves.toMatch(
      /Ordering\s+per resource: one event of a resource at a time, in order; a failing one holds the next back for up to 1 h/,
    );
    await page.goto(`${fixture.origin}/console/dispatches/${second.id}`);
    const facts = await page.locator("dl.facts").first().innerText();
    expect(facts).toMatch(new RegExp(`Waiting for\\s+${blocker.event.id}, an earlier event of the same resource`));
    expect(facts).toMatch(/Sequence\s+#2 in this webhook's stream/);
    expect(await seriousViolations(page)).toEqual([]);
  });
});
