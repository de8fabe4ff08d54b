import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mintToken } from "../../lib/auth/jwt.ts";
import { DEVELOPMENT_JWT_SECRET } from "../../lib/config/env.ts";
import { eventually } from "../../test/support/eventually.ts";
import { HARNESS_START_MS, pgliteFactory, startHarness, type Harness } from "../../test/support/harness.ts";
import { startReceiver, type TestReceiver } from "../../test/support/receiver.ts";
import { expectSecurityHeaders } from "../../test/support/security-headers.ts";
import { notifyOwner } from "../../lib/webhook/outbound/webhook-owner-notifier.ts";
import { notifyOwnersTask } from "../../lib/webhook/sweeper/notify-owners.ts";
import { createApp } from "../app.ts";

const OWNER = { account: "acc_console" };

describe("the console", () => {
  let harness: Harness;
  let receiver: TestReceiver;
  let app: ReturnType<typeof createApp>;
  const answers = new Map<string, number>();
  // The browser's cookie jar and the form token of the last page it showed.
  const jar = new Map<string, string>();
  let csrf = "";
  const cookie = () => [...jar].map(([name, value]) => `${name}=${value}`).join("; ");
  const remember = (response: Response) => {
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(";");
      const [name, value] = pair!.split("=") as [string, string];
      if (value === "") jar.delete(name);
      else jar.set(name, value);
    }
    return response;
  };

  beforeAll(async () => {
    receiver = await startReceiver((post) => ({ status: answers.get(post.path) ?? 200 }));
    harness = await startHarness(pgliteFactory, { env: { WEBHOOK_TIMEOUT_MS: "10000" } });
    await harness.accounts(OWNER.account, "acc_someone_else");
    app = createApp(harness.hooklane);
  }, HARNESS_START_MS);
  afterAll(async () => {
    await harness?.close();
    await receiver?.close();
  });

  /** A form posted from a page of the console itself, carrying that page's token. */
  const post = async (path: string, fields: Record<string, string>, headers: Record<string, string> = {}) =>
    remember(
      await app.request(path, {
        method: "POST",
        headers: {
          "content-type": "application/x-www-form-urlencoded",
          origin: "http://localhost",
          cookie: cookie(),
          ...headers,
        },
        body: new URLSearchParams({ csrf, ...fields }).toString(),
      }),
    );
  const page = async (path: string) => {
    const response = remember(await app.request(path, { headers: { cookie: cookie() } }));
    const html = await response.text();
    csrf = /name="csrf" value="([^"]+)"/.exec(html)?.[1] ?? csrf;
    return { status: response.status, html, headers: response.headers };
  };

  it("asks for a token, refuses a bad one, and keeps a good one in an HttpOnly, SameSite=Strict cookie", async () => {
    expect((await page("/console")).status).toBe(401);
    expect((await page("/console")).html).toContain('action="/console/login"');
    const refused = await post("/console/login", { token: "not-a-jwt" });
    expect(refused.status).toBe(401);
    expect(await refused.text()).toContain("not accepted");

    const token = await mintToken(DEVELOPMENT_JWT_SECRET, { sub: "operator", ...OWNER });
    const accepted = await post("/console/login", { token });
    expect(accepted.status).toBe(303);
    const setCookie = accepted.headers.getSetCookie().find((line) => line.startsWith("hooklane_console="))!;
    expect(setCookie).toMatch(/HttpOnly/);
    expect(setCookie).toMatch(/SameSite=Strict/);
    expect(setCookie).toMatch(/Path=\/console/);
    // The session ends with the token (12 h), not with the browser.
    const maxAge = Number(/Max-Age=(\d+)/.exec(setCookie)?.[1]);
    expect(maxAge).toBeGreaterThan(12 * 3_600 - 60);
    expect(maxAge).toBeLessThanOrEqual(12 * 3_600);
    expect((await page("/console")).status).toBe(200);
  });

  it("shows the delivery log with status, attempts, last code and next retry, and retries from it", async () => {
    answers.set("/failing", 500);
    const hook = await harness.call("POST", "/v3/webhooks", {
      ...OWNER,
      body: { url: `${receiver.url}/failing`, events: ["*"], description: "billing sync" },
    });
    const test = await harness.call("POST", `/v3/webhooks/${hook.body.id}/test`, OWNER);
    await eventually(
      () => harness.call("GET", `/v3/webhook-dispatches/${test.body.id}`, OWNER).then((r) => r.body.status),
      (status) => status === "exhausted",
    );

    const list = await page("/console");
    expect(list.status).toBe(200);
    expect(list.html).toContain(`href="/console/webhooks/${hook.body.id}"`);
    expect(list.html).toContain("billing sync");

    const log = await page(`/console/webhooks/${hook.body.id}`);
    const row = log.html.slice(log.html.indexOf(test.body.event.id));
    expect(row).toMatch(/class="status-exhausted">\s*exhausted/);
    expect(row).toMatch(
      />\s*6\s*<\/td>\s*<td data-label="Last answer">500<\/td>\s*<td data-label="Next attempt">—<\/td>/,
    );
    expect(row).toContain(`action="/console/dispatches/${test.body.id}/retry"`);

    answers.set("/failing", 200);
    const retried = await post(`/console/dispatches/${test.body.id}/retry`, {
      back: `webhooks/${hook.body.id}`,
    });
    expect(retried.status).toBe(303);
    expect(retried.headers.get("location")).toMatch(new RegExp(`^/console/webhooks/${hook.body.id}\\?notice=`));
    await eventually(
      () => harness.call("GET", `/v3/webhook-dispatches/${test.body.id}`, OWNER).then((r) => r.body),
      (dispatch) => dispatch.status === "success" && dispatch.run === 2,
    );

    const recover = await post(`/console/webhooks/${hook.body.id}/recover`, { hours: "24" });
    expect(recover.status).toBe(303);
    const location = recover.headers.get("location")!;
    expect(location).toMatch(new RegExp(`^/console/webhooks/${hook.body.id}/recoveries/whr_`));
    expect((await page(location)).html).toMatch(/id="recovery-state"/);
  });

  it("shows what owners were told: digests with types and counts, disables, and each e-mail's state", async () => {
    const hook = (await harness.call("GET", "/v3/webhooks?limit=1", OWNER)).body.data[0];
    await notifyOwner(harness.hooklane.database, {
      webhookId: hook.id,
      kind: "webhook.disabled",
      detail: { reason: "endpoint answered 410 Gone" },
    });
    // The exhausted test event of the last test, folded into its digest an hour on.
    await notifyOwnersTask.run({
      hooklane: harness.hooklane,
      workerId: "console-test",
      now: () => new Date(Date.now() + 2 * 3_600_000),
    });
    const shown = await page("/console/notifications");
    expect(shown.status).toBe(200);
    expect(shown.html).toContain("disabled: endpoint answered 410 Gone");
    expect(shown.html).toMatch(/1 failed for good:\s*<br \/><code>webhook.test<\/code> × 1/);
    expect(shown.html).toContain(`href="/console/webhooks/${hook.id}"`);
    // No SMTP here: nobody to mail, and the page says so.
    expect(shown.html).toMatch(/<td>\s*none/);
    expect((await page("/console")).html).toContain('href="/console/notifications"');
  });

  it("reaches only what the token may: another account's webhook is not found", async () => {
    const other = await harness.call("POST", "/v3/webhooks", {
      account: "acc_someone_else",
      body: { url: `${receiver.url}/theirs`, events: ["*"] },
    });
    const response = await page(`/console/webhooks/${other.body.id}`);
    expect(response.status).toBe(404);
    expect(response.html).not.toContain("/theirs");
    const forged = await post(`/console/webhooks/${other.body.id}/recover`, { hours: "24" });
    expect(forged.status).toBe(404);
  });

  it("refuses a form from another site, or without its token, sign-in included: 403, and nothing runs", async () => {
    answers.set("/forged", 500);
    const hook = await harness.call("POST", "/v3/webhooks", {
      ...OWNER,
      body: { url: `${receiver.url}/forged`, events: ["*"] },
    });
    const test = await harness.call("POST", `/v3/webhooks/${hook.body.id}/test`, OWNER);
    const dispatch = () => harness.call("GET", `/v3/webhook-dispatches/${test.body.id}`, OWNER).then((r) => r.body);
    await eventually(dispatch, (d) => d.status === "exhausted");
    await page(`/console/webhooks/${hook.body.id}`);
    const token = await mintToken(DEVELOPMENT_JWT_SECRET, { sub: "attacker", account: "acc_someone_else" });

    const forms: Array<[string, Record<string, string>]> = [
      [`/console/dispatches/${test.body.id}/retry`, { back: `webhooks/${hook.body.id}` }],
      [`/console/webhooks/${hook.body.id}/recover`, { hours: "24" }],
      ["/console/login", { token }],
      ["/console/logout", {}],
    ];
    const forgeries: Array<[string, Record<string, string>, Record<string, string>]> = [
      ["another origin", {}, { origin: "https://evil.example" }],
      ["a sibling subdomain", {}, { origin: "http://evil.localhost" }],
      ["a cross-site fetch without Origin", {}, { origin: "", "sec-fetch-site": "cross-site" }],
      ["no form token", { csrf: "" }, {}],
      ["a form token of another browser", { csrf: "A".repeat(43) }, {}],
    ];
    for (const [path, fields] of forms) {
      for (const [what, override, headers] of forgeries) {
        const response = await post(path, { ...fields, ...override }, headers);
        expect(response.status, `${path} from ${what}`).toBe(403);
        expect(
          response.headers.getSetCookie().some((line) => line.startsWith("hooklane_console=")),
          what,
        ).toBe(false);
        expectSecurityHeaders(response, await response.text());
      }
    }
    // Same-origin by Sec-Fetch-Site alone (no Origin) with the token is the console itself.
    const own = await post("/console/login", { token: "not-a-jwt" }, { origin: "", "sec-fetch-site": "same-origin" });
    expect(own.status).toBe(401);
    await page("/console");

    expect(receiver.posts.filter((p) => p.path === "/forged").length).toBe(6);
    expect(await dispatch()).toMatchObject({ status: "exhausted", run: 1 });
    expect((await page("/console")).status).toBe(200);
    expect((await harness.call("GET", `/v3/webhooks/${hook.body.id}/dispatches`, OWNER)).body.data.length).toBe(1);
  });

  it("sends the security headers with every console page and answer", async () => {
    const signedIn = [...jar];
    const hook = (await harness.call("GET", "/v3/webhooks?limit=1", OWNER)).body.data[0];
    const check = async (response: Response) => expectSecurityHeaders(response, await response.text());
    await check(await app.request("/console", { headers: { cookie: cookie() } }));
    await check(await app.request(`/console/webhooks/${hook.id}`, { headers: { cookie: cookie() } }));
    await check(await app.request("/console/webhooks/wh_0000", { headers: { cookie: cookie() } }));
    await check(await post(`/console/webhooks/${hook.id}/recover`, { hours: "5" }));
    await check(await post("/console/login", { token: "x" }, { origin: "https://evil.example" }));
    await check(await app.request("/console"));
    // The sign-out form works and ends the session.
    const out = await post("/console/logout", {});
    expect(out.status).toBe(303);
    await check(out);
    expect(jar.has("hooklane_console")).toBe(false);
    expect((await page("/console")).status).toBe(401);
    for (const [name, value] of signedIn) jar.set(name, value);
  });

  it("pages through every webhook, 25 at a time, each listed once", async () => {
    for (let i = 0; i < 26; i++) {
      const made = await harness.call("POST", "/v3/webhooks", {
        ...OWNER,
        body: { url: `${receiver.url}/paged-${i}`, events: ["*"] },
      });
      expect(made.status).toBe(201);
    }
    const all = (await harness.call("GET", "/v3/webhooks?limit=100", OWNER)).body.data.map((w: { id: string }) => w.id);
    expect(all.length).toBeGreaterThan(26);
    const seen: string[] = [];
    let path: string | undefined = "/console";
    for (let pages = 0; path && pages < 10; pages++) {
      const list = await page(path);
      expect(list.status).toBe(200);
      seen.push(...[...list.html.matchAll(/<a href="\/console\/webhooks\/(wh_[a-f0-9]+)">/g)].map((m) => m[1]!));
      path = /<a href="(\/console\?cursor=[^"]+)">More webhooks/.exec(list.html)?.[1]?.replaceAll("&amp;", "&");
    }
    expect(seen.sort()).toEqual([...all].sort());
  });
});
