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
import { startReceiver, type TestReceiver } from "../support/receiver.ts";

const ACCOUNT = "acc_browser_phone";

describe.skipIf(!hasChromium())("every console and portal page at 375 and 1280 px, checked by axe-core", () => {
  let fixture: BrowserFixture;
  let receiver: TestReceiver;

  beforeAll(async () => {
    receiver = await startReceiver(() => ({ status: 503, body: "x".repeat(400) }));
    fixture = await startBrowserFixture();
  }, HARNESS_START_MS);
  afterAll(async () => {
    await fixture?.close();
    await receiver?.close();
  });

  it.each([375, 1280])(
    "fits every page in %i px without horizontal overflow, with no serious accessibility violation",
    async (width) => {
      const page = await fixture.page({ width });
      await page.goto(`${fixture.origin}/console`);
      const pages: Array<[string, string]> = [["sign-in", page.url()]];
      await fixture.signIn(page, ACCOUNT);
      const call = (method: string, path: string, body?: unknown) =>
        fixture.harness.call(method, path, { account: ACCOUNT, ...(body ? { body } : {}) });
      const hook = (
        await call("POST", "/v3/webhooks", {
          url: `${receiver.url}/a-rather-long-path/that-goes-on/and-on/for-a-phone-screen`,
          events: ["*"],
          description: "A webhook whose description is long enough to wrap on a narrow screen",
        })
      ).body;
      const test = (await call("POST", `/v3/webhooks/${hook.id}/test`)).body;
      await eventually(
        () => call("GET", `/v3/webhook-dispatches/${test.id}`).then((r) => r.body.status),
        (status) => status === "exhausted",
      );
      const recovery = (
        await call("POST", `/v3/webhooks/${hook.id}/recover`, { since: new Date(Date.now() - 3_600_000).toISOString() })
      ).body;
      const o = fixture.origin;
      pages.push(
        ["webhooks", `${o}/console`],
        ["new-webhook", `${o}/console/webhooks/new`],
        ["webhook", `${o}/console/webhooks/${hook.id}`],
        ["webhook-filtered", `${o}/console/webhooks/${hook.id}?status=exhausted&q=${test.event.id}`],
        ["edit-webhook", `${o}/console/webhooks/${hook.id}/edit`],
        ["delete-webhook", `${o}/console/webhooks/${hook.id}/delete`],
        ["delivery", `${o}/console/dispatches/${test.id}`],
        ["recovery", `${o}/console/webhooks/${hook.id}/recoveries/${recovery.id}`],
        ["secret-already-shown", `${o}/console/webhooks/${hook.id}/secret/${"x".repeat(43)}`],
        ["event-types", `${o}/console/event-types`],
        ["notifications", `${o}/console/notifications`],
        ["signing-keys", `${o}/console/signing-keys`],
      );
      // The same pages through a portal session, which another site frames.
      const portal = (
        await call("POST", "/v3/portal-sessions", { frameAncestors: ["https://app.example.com"], expiresIn: 900 })
      ).body;
      const p = `${o}${new URL(portal.url).pathname}`;
      pages.push(
        ["portal-webhooks", p],
        ["portal-new-webhook", `${p}/webhooks/new`],
        ["portal-webhook", `${p}/webhooks/${hook.id}`],
        ["portal-delivery", `${p}/dispatches/${test.id}`],
        ["portal-recovery", `${p}/webhooks/${hook.id}/recoveries/${recovery.id}`],
        ["portal-event-types", `${p}/event-types`],
        ["portal-notifications", `${p}/notifications`],
        ["portal-signing-keys", `${p}/signing-keys`],
      );
      const failures: string[] = [];
      for (const [name, url] of pages) {
        if (name === "sign-in") await page.context().clearCookies();
        const status = (await page.goto(url))!.status();
        // Each page as it is meant to be seen: signed out, the sign-in page (401); a secret's page a second time, 410.
        const expected = name === "sign-in" ? 401 : name === "secret-already-shown" ? 410 : 200;
        if (status !== expected) failures.push(`${name}: answered ${status}`);
        const { scrollWidth, clientWidth } = await widths(page);
        // Without a viewport meta a phone lays the page out 980 px wide and shrinks it.
        if (width === 375 && clientWidth !== 375) failures.push(`${name}: laid out ${clientWidth} px wide`);
        if (scrollWidth > clientWidth) failures.push(`${name}: scrollWidth ${scrollWidth} > ${clientWidth}`);
        for (const violation of await seriousViolations(page)) failures.push(`${name}: ${violation}`);
        await screenshot(page, `5-${width}-${name}`);
        if (name === "sign-in") await fixture.signIn(page, ACCOUNT);
      }
      expect(failures).toEqual([]);
    },
  );
});
