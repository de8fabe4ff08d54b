import { eq } from "drizzle-orm";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { account, webhook } from "../../lib/db/schema.ts";
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

const ACCOUNT = "acc_browser_consent";
const OTHER = "acc_browser_consent_other";
const HELD = "Deliveries held: the endpoint has not consented yet";
const ASK = "Ask the endpoint again";
/** What an endpoint that never heard of consent answers, as the console words it. */
const REFUSED = "answered HTTP 405: not the consent answer";
/** An answer header meant to become markup in the page that shows it. */
const HOSTILE_ORIGIN = `<img src=x id=injected onerror="document.title='pwned'"> & "quoted"`;

/** How the endpoint answers the consent request: as a server that knows nothing of it, with markup, or consenting. */
type Mode = "refuse" | "hostile" | "consent";

interface Endpoint {
  url: string;
  mode: Mode;
  options: IncomingHttpHeaders[];
  posts: string[];
  close(): Promise<void>;
}

async function startEndpoint(): Promise<Endpoint> {
  const endpoint = { mode: "refuse", options: [], posts: [] } as unknown as Endpoint;
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      if (request.method !== "OPTIONS") {
        endpoint.posts.push(Buffer.concat(chunks).toString("utf8"));
        response.writeHead(200).end();
        return;
      }
      endpoint.options.push(request.headers);
      if (endpoint.mode === "refuse") {
        response.writeHead(405, { allow: "POST" }).end();
        return;
      }
      const allowed = endpoint.mode === "consent" ? String(request.headers["webhook-request-origin"]) : HOSTILE_ORIGIN;
      response.writeHead(200, { allow: "POST", "webhook-allowed-origin": allowed }).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  endpoint.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  endpoint.close = () => new Promise((resolve) => server.close(() => resolve()));
  return endpoint;
}

describe.skipIf(!hasChromium())("the console and the portal in a browser: endpoint consent", () => {
  let fixture: BrowserFixture;
  let endpoint: Endpoint;

  beforeAll(async () => {
    endpoint = await startEndpoint();
    fixture = await startBrowserFixture();
    await fixture.harness.hooklane.database.db
      .insert(account)
      .values([
        { id: ACCOUNT, name: ACCOUNT, endpointConsent: true },
        { id: OTHER, name: OTHER },
      ])
      .onConflictDoNothing();
  }, HARNESS_START_MS);
  afterAll(async () => {
    await fixture?.close();
    await endpoint?.close();
  });

  const api = (method: string, path: string, as = ACCOUNT, body?: unknown) =>
    fixture.harness.call(method, path, { account: as, ...(body === undefined ? {} : { body }) });
  /** When the last consent request went, as the row keeps it: moved back, the next ask is not "too soon". */
  const lastRequestAt = (id: string, at: Date) =>
    fixture.harness.hooklane.database.db.update(webhook).set({ consentSentAt: at }).where(eq(webhook.id, id));
  const held = (page: Page) => page.getByRole("region", { name: HELD });
  const flash = (page: Page) => page.locator("p.notice");
  /** Clicks "Ask the endpoint again" and waits for the page it comes back to. */
  const askAgain = async (page: Page) => {
    await page.getByRole("button", { name: ASK }).click();
    await page.waitForURL(/\/webhooks\/wh_[^/]+\?notice=/);
  };
  const portalBase = async (as: string) => {
    const session = await api("POST", "/v3/portal-sessions", as, { frameAncestors: ["https://app.example.com"] });
    expect(session.status, session.text).toBe(201);
    return `${fixture.origin}${new URL(session.body.url).pathname}`;
  };

  it("holds deliveries until the endpoint consents, says why, and asks it again on demand", async () => {
    const created = await api("POST", "/v3/webhooks", ACCOUNT, { url: `${endpoint.url}/hook`, events: ["*"] });
    expect(created.status, created.text).toBe(201);
    const id = created.body.id as string;
    expect(created.body.consent).toMatchObject({ state: "pending" });
    const test = await api("POST", `/v3/webhooks/${id}/test`);
    expect(test.status, test.text).toBeLessThan(300);

    // The sweeper asks at once; the endpoint does not know what consent is.
    const asked = await eventually(
      async () => (await api("GET", `/v3/webhooks/${id}`)).body.consent,
      (consent) => consent?.attempts >= 1,
      { timeoutMs: 45_000, everyMs: 100 },
    );
    expect(asked).toMatchObject({ state: "pending", lastError: REFUSED });
    expect(endpoint.options[0]!["webhook-request-origin"]).toBe("hooklane");

    // The list marks it.
    const page = await fixture.page();
    await fixture.signIn(page, ACCOUNT);
    const row = page.getByRole("row").filter({ hasText: id });
    expect(await row.locator(".badge").innerText()).toBe("awaiting consent");

    // Its page says deliveries are held, since when, how often it was asked, what it answered, what it must answer.
    await row.getByRole("link", { name: `${endpoint.url}/hook` }).click();
    await held(page).waitFor();
    const notice = await held(page).innerText();
    expect(notice).toContain("Nothing is sent to this URL until the endpoint answers the consent request.");
    expect(notice).toContain(`Requests sent\n${asked.attempts}, the last`);
    expect(notice).toContain(`Last answer\n${REFUSED}`);
    expect(notice).toMatch(/Next request\nin \d+ (seconds|minute)/);
    expect(notice).toContain(
      "To consent, the endpoint answers the OPTIONS request carrying WebHook-Request-Origin: hooklane with a 2xx and WebHook-Allowed-Origin: hooklane (or *).",
    );
    expect(await held(page).locator("time").first().getAttribute("datetime")).toBe(asked.requested);
    expect(await page.locator("dl.facts .badge").innerText()).toBe("awaiting consent");
    expect(endpoint.posts).toEqual([]);
    await screenshot(page, "consent-held");
    expect(await seriousViolations(page)).toEqual([]);

    // Asked moments ago: no request goes, and the page says when one may.
    const sent = endpoint.options.length;
    await lastRequestAt(id, new Date());
    await askAgain(page);
    expect(await flash(page).innerText()).toMatch(/^The endpoint was asked less than 10 s ago: try again in \d+ s\.$/);
    expect(endpoint.options).toHaveLength(sent);

    // Through the portal, as the account's customer, in a phone-wide frame: the same notice and button. The
    // endpoint answers with markup, which the page shows as the text it is.
    const portal = await fixture.page({ width: 375 });
    await portal.goto(`${await portalBase(ACCOUNT)}/webhooks/${id}`);
    await held(portal).waitFor();
    endpoint.mode = "hostile";
    await lastRequestAt(id, new Date(Date.now() - 60_000));
    await askAgain(portal);
    expect(endpoint.options).toHaveLength(sent + 1);
    const why = `answered WebHook-Allowed-Origin: ${HOSTILE_ORIGIN}, which does not allow hooklane`;
    expect(await flash(portal).innerText()).toBe(`Still no consent: ${why}. Events stay held.`);
    expect(await held(portal).innerText()).toContain(`Last answer\n${why}`);
    expect(await portal.locator("#injected").count()).toBe(0);
    expect(await portal.title()).not.toBe("pwned");
    const { scrollWidth, clientWidth } = await widths(portal);
    expect(scrollWidth).toBeLessThanOrEqual(clientWidth);
    await screenshot(portal, "consent-held-portal-375");
    expect(await seriousViolations(portal)).toEqual([]);
    expect((await api("GET", `/v3/webhooks/${id}`)).body.consent).toMatchObject({ state: "pending", lastError: why });

    // Another account's portal cannot ask this webhook's endpoint: it is not found there.
    const otherBase = await portalBase(OTHER);
    const other = await fixture.page();
    await other.goto(`${otherBase}/webhooks/new`);
    const csrf = await other.locator('input[name="csrf"]').first().getAttribute("value");
    await lastRequestAt(id, new Date(Date.now() - 60_000));
    const stranger = await other.request.post(`${otherBase}/webhooks/${id}/request-consent`, {
      form: { csrf: csrf! },
      headers: { origin: fixture.origin },
    });
    expect(stranger.status()).toBe(404);
    expect(endpoint.options).toHaveLength(sent + 1);

    // It consents: asked again, the held event goes, and the page says since when.
    endpoint.mode = "consent";
    await page.reload();
    await askAgain(page);
    expect(await flash(page).innerText()).toBe("The endpoint consented: events held for it are on their way.");
    expect(await held(page).count()).toBe(0);
    expect(await page.getByRole("button", { name: ASK }).count()).toBe(0);
    const consent = (await api("GET", `/v3/webhooks/${id}`)).body.consent;
    expect(consent).toMatchObject({ state: "granted", lastError: null, nextRequest: null });
    const consented = page.locator("#webhook-consent");
    expect(await consented.innerText()).toMatch(/^Endpoint consented (now|\d+ seconds? ago)\.$/);
    expect(await consented.locator("time").getAttribute("datetime")).toBe(consent.granted);
    expect(await page.locator(".badge").count()).toBe(0);
    // A page from before it consented asks again: nothing is sent, and the page says why.
    const stale = await page.request.post(`${fixture.origin}/console/webhooks/${id}/request-consent`, {
      form: { csrf: (await page.locator('input[name="csrf"]').first().getAttribute("value"))! },
      headers: { origin: fixture.origin },
    });
    expect(stale.status()).toBe(200);
    expect(new URL(stale.url()).searchParams.get("notice")).toBe("The endpoint has consented already.");
    expect(endpoint.options).toHaveLength(sent + 2);
    await eventually(
      async () => endpoint.posts.length,
      (n) => n === 1,
      { timeoutMs: 20_000 },
    );
    expect(await seriousViolations(page)).toEqual([]);

    await page.goto(`${fixture.origin}/console`);
    expect(await page.getByRole("row").filter({ hasText: id }).locator(".badge").count()).toBe(0);

    // The console asked through the API: each request it sent is audited as the API's own.
    const audit = await api("GET", `/v3/audit-log?target=${id}&limit=100`);
    expect(audit.status, audit.text).toBe(200);
    const asks = (audit.body.data as Array<{ action: string; detail: unknown }>)
      .filter((entry) => entry.action === "webhook.consent-requested")
      .reverse()
      .map((entry) => entry.detail);
    expect(asks).toEqual([{ granted: false }, { granted: true }]);
  });
});
