import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HARNESS_START_MS } from "../support/harness.ts";
import { hasChromium, screenshot, startBrowserFixture, type BrowserFixture } from "../support/browser.ts";
import { startReceiver, type TestReceiver } from "../support/receiver.ts";

const CUSTOMER = "acc_portal_customer";
const OTHER = "acc_portal_other";

/** A page of another site that frames `src`. */
async function embedder(): Promise<{ origin: string; pageFor(src: string): string; close(): Promise<void> }> {
  let src = "";
  const server: Server = createServer((_, res) => {
    res.writeHead(200, { "content-type": "text/html" });
    res.end(
      `<!doctype html><title>Acme dashboard</title><h1>Acme</h1><iframe title="Webhooks" src="${src}" width="1000" height="700"></iframe>`,
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  // Named by "localhost": another site than the API's 127.0.0.1.
  const origin = `http://localhost:${(server.address() as AddressInfo).port}`;
  return {
    origin,
    pageFor(url) {
      src = url;
      return origin;
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

describe.skipIf(!hasChromium())("the embeddable portal in a browser", () => {
  let fixture: BrowserFixture;
  let receiver: TestReceiver;
  let allowed: Awaited<ReturnType<typeof embedder>>;
  let stranger: Awaited<ReturnType<typeof embedder>>;

  beforeAll(async () => {
    receiver = await startReceiver(() => ({ status: 200 }));
    fixture = await startBrowserFixture();
    await fixture.harness.accounts(CUSTOMER, OTHER);
    allowed = await embedder();
    stranger = await embedder();
  }, HARNESS_START_MS);
  afterAll(async () => {
    await fixture?.close();
    await receiver?.close();
    await allowed?.close();
    await stranger?.close();
  });

  it("opens the console for its account only, embeddable by its origins only, until it expires", async () => {
    const as = (account: string) => (method: string, path: string, body?: unknown) =>
      fixture.harness.call(method, path, { account, ...(body ? { body } : {}) });
    const mine = (await as(CUSTOMER)("POST", "/v3/webhooks", { url: `${receiver.url}/customer`, events: ["*"] })).body;
    const theirs = (await as(OTHER)("POST", "/v3/webhooks", { url: `${receiver.url}/other`, events: ["*"] })).body;
    const theirTest = (await as(OTHER)("POST", `/v3/webhooks/${theirs.id}/test`)).body;

    const created = await as(CUSTOMER)("POST", "/v3/portal-sessions", {
      frameAncestors: [allowed.origin],
      expiresIn: 15,
    });
    expect(created.status).toBe(201);
    const session = created.body;
    expect(session).toMatchObject({ object: "portal-session", account: CUSTOMER, frameAncestors: [allowed.origin] });
    const url = new URL(session.url);
    const base = url.pathname;
    const portalUrl = `${fixture.origin}${base}`;

    // Opened directly: this account's webhooks, nobody else's, and no way out of the portal.
    const page = await fixture.page();
    const opened = await page.goto(portalUrl);
    expect(opened!.status()).toBe(200);
    const headers = opened!.headers();
    expect(headers["content-security-policy"]).toContain(`frame-ancestors ${allowed.origin};`);
    expect(headers["x-frame-options"]).toBeUndefined();
    expect(await page.content()).toContain(mine.url);
    expect(await page.content()).not.toContain(theirs.id);
    expect(await page.getByRole("button", { name: "Sign out" }).count()).toBe(0);
    for (const path of [`/webhooks/${theirs.id}`, `/dispatches/${theirTest.id}`, `/webhooks/${theirs.id}/edit`]) {
      const answer = await page.goto(`${portalUrl}${path}`);
      expect(answer!.status(), path).toBe(404);
      expect(await page.content()).not.toContain(`${receiver.url}/other`);
    }
    // The session is the console only: never a bearer token for the API, nor a signed-in console.
    const bearer = await fetch(`${fixture.origin}/v3/webhooks`, {
      headers: { authorization: `Bearer ${url.pathname.split("/").pop()}` },
    });
    expect(bearer.status).toBe(401);
    expect((await page.goto(`${fixture.origin}/console`))!.status()).toBe(401);
    const forged = await page.goto(`${portalUrl.slice(0, -4)}AAAA`);
    expect(forged!.status()).toBe(404);

    // Framed by the origin it names: it shows and works, forms included.
    const framed = await fixture.page();
    await framed.goto(allowed.pageFor(portalUrl));
    const frame = framed.frameLocator("iframe");
    await frame.getByRole("link", { name: mine.url }).click();
    await frame.getByRole("button", { name: "Pause deliveries" }).click();
    await frame.getByText("Deliveries paused").waitFor();
    expect((await as(CUSTOMER)("GET", `/v3/webhooks/${mine.id}`)).body.status).toBe("paused");
    await screenshot(framed, "4-portal-framed");

    // Framed by any other origin: the browser refuses to show it.
    const refused = await fixture.page();
    await refused.goto(stranger.pageFor(portalUrl));
    // The page's load event waits for its frame, refused or not.
    await refused.waitForLoadState("load");
    const inner = refused.frames().find((f) => f !== refused.mainFrame())!;
    // Chromium's error page in place of the console (the frame's URL can still read "" right after the load event).
    await expect.poll(() => inner.url()).toBe("chrome-error://chromewebdata/");
    expect(await inner.locator("text=Webhooks").count()).toBe(0);
    await screenshot(refused, "4-portal-refused-by-other-origin");

    // On time: live until `expires`, ended from then on.
    const expires = new Date(session.expires).getTime();
    expect(expires - new Date(session.created).getTime()).toBe(15_000);
    expect(Date.now()).toBeLessThan(expires);
    expect((await page.goto(portalUrl))!.status()).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, expires - Date.now() + 50));
    const ended = await page.goto(portalUrl);
    expect(ended!.status()).toBe(401);
    expect(await page.content()).toContain("This webhooks portal session has ended.");
    expect(await page.content()).not.toContain(mine.url);
    expect((await page.goto(`${portalUrl}/webhooks/${mine.id}`))!.status()).toBe(401);
  });
});
