import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mintToken } from "../../lib/auth/jwt.ts";
import { DEVELOPMENT_JWT_SECRET } from "../../lib/config/env.ts";
import { eventually } from "../../test/support/eventually.ts";
import { HARNESS_START_MS, pgliteFactory, startHarness, type Harness } from "../../test/support/harness.ts";
import { startReceiver, type TestReceiver } from "../../test/support/receiver.ts";
import { expectSecurityHeaders } from "../../test/support/security-headers.ts";
import { notifyOwner } from "../../lib/webhook/outbound/webhook-owner-notifier.ts";
import { notifyOwnersTask } from "../../lib/webhook/sweeper/notify-owners.ts";
import { consoleSession } from "../../lib/db/schema.ts";
import { pruneSessionsTask } from "../../lib/webhook/sweeper/prune-sessions.ts";
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

  it("asks for a token, refuses a bad one, and keeps a session id (never the token) in an HttpOnly, SameSite=Strict cookie", async () => {
    const first = await page("/console");
    expect(first.status).toBe(401);
    expect(first.html).toContain('action="/console/login"');
    // The form token's nonce, plain-named without Secure over http like the session's cookie below.
    const nonceCookie = first.headers.getSetCookie().find((line) => line.startsWith("hooklane_console_nonce="))!;
    expect(nonceCookie).toMatch(/HttpOnly/);
    expect(nonceCookie).toMatch(/SameSite=Strict/);
    expect(nonceCookie).not.toMatch(/Secure|Domain/);
    const refused = await post("/console/login", { token: "not-a-jwt" });
    expect(refused.status).toBe(401);
    expect(await refused.text()).toContain("not accepted");

    const token = await mintToken(DEVELOPMENT_JWT_SECRET, { sub: "operator", ...OWNER });
    const accepted = await post("/console/login", { token });
    expect(accepted.status).toBe(303);
    const setCookie = accepted.headers.getSetCookie().find((line) => line.startsWith("hooklane_session="))!;
    expect(setCookie).toMatch(/HttpOnly/);
    expect(setCookie).toMatch(/SameSite=Strict/);
    expect(setCookie).toMatch(/Path=\/;/);
    // Development over plain http: no __Host- prefix and no Secure, which browsers would refuse here.
    expect(setCookie).not.toMatch(/Secure|Domain/);
    const id = /^hooklane_session=([^;]*)/.exec(setCookie)![1]!;
    expect(id).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(setCookie).not.toContain(token.split(".")[1]);
    // Only the id's SHA-256 is stored, with the claims: neither the id nor the token.
    const rows = await harness.hooklane.database.db.select().from(consoleSession);
    expect(JSON.stringify(rows)).not.toContain(id);
    expect(JSON.stringify(rows)).not.toContain(token);
    expect(rows.at(-1)).toMatchObject({ subject: "operator", account: OWNER.account, role: null, revokedAt: null });
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
    // A test event tells its owner nothing: the last test's exhausted one left no notification.
    const before = await harness.call("GET", "/v3/notifications", OWNER);
    expect(before.body.data.filter((n: { kind: string }) => n.kind.startsWith("dispatch.exhausted"))).toEqual([]);
    await notifyOwner(harness.hooklane.database, {
      webhookId: hook.id,
      kind: "dispatch.exhausted",
      detail: { dispatchId: "wd_1", eventId: "evt_1", eventType: "payment-debt.created", attempts: 6 },
    });
    // Folded into its digest an hour on.
    await notifyOwnersTask.run({
      hooklane: harness.hooklane,
      workerId: "console-test",
      now: () => new Date(Date.now() + 2 * 3_600_000),
    });
    const shown = await page("/console/notifications");
    expect(shown.status).toBe(200);
    expect(shown.html).toContain("disabled: endpoint answered 410 Gone");
    expect(shown.html).toMatch(/1 failed for good:\s*<br \/><code>payment-debt.created<\/code> × 1/);
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

  it("previews a filter only on a webhook the caller may see, and answers input it cannot judge with the form", async () => {
    const mine = await harness.call("POST", "/v3/webhooks", {
      ...OWNER,
      body: { url: `${receiver.url}/previewed`, events: ["payment-debt.created"] },
    });
    const other = await harness.call("POST", "/v3/webhooks", {
      account: "acc_someone_else",
      body: { url: `${receiver.url}/theirs-previewed`, events: ["payment-debt.created"] },
    });
    await page(`/console/webhooks/${mine.body.id}/edit`);
    const preview = async (id: string, events: string, filter: string) => {
      const response = await post(`/console/webhooks/${id}/edit/preview`, { url: "x", events, filter });
      return { status: response.status, line: /id="filter-preview">([^<]*)</.exec(await response.text())?.[1] };
    };
    expect(await preview(other.body.id, "payment-debt.created", 'currency == "EUR"')).toEqual({
      status: 404,
      line: undefined,
    });
    expect(await preview(mine.body.id, "payment-debt.created", 'currency == "EUR"')).toEqual({
      status: 200,
      line: "No events of these types in the delivery log yet to preview it on.",
    });
    // A NUL is refused as the API would refuse it, before PostgreSQL sees it.
    expect(await preview(mine.body.id, "payment-debt.\u0000", 'currency == "EUR"')).toEqual({
      status: 422,
      line: "events[0]: must not contain control characters (U+0000)",
    });
    expect(await preview(mine.body.id, "payment-debt.created", " ")).toEqual({
      status: 200,
      line: "No filter: every event it subscribes to is sent.",
    });
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
      [`/console/webhooks/${hook.body.id}/rotate-secret`, { grace: "0" }],
      [`/console/webhooks/${hook.body.id}/expire-previous-secret`, {}],
      [`/console/webhooks/${hook.body.id}/request-consent`, {}],
      ["/console/signing-keys/rotate", { grace: "3600" }],
      ["/console/signing-keys/rotate", { immediate: "true" }],
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
          response.headers.getSetCookie().some((line) => line.startsWith("hooklane_session=")),
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
    const audit = await harness.call("GET", `/v3/audit-log?target=${hook.body.id}&limit=100`, OWNER);
    expect(audit.body.data.filter((e: { action: string }) => e.action.includes("secret"))).toEqual([]);
    expect((await harness.call("GET", "/v3/webhook-signing-keys", OWNER)).body.data).toEqual([]);
  });

  it("rotates with a grace it offered, the API's default when none is sent, and refuses any other", async () => {
    const hook = await harness.call("POST", "/v3/webhooks", {
      ...OWNER,
      body: { url: `${receiver.url}/rotated`, events: ["*"] },
    });
    const rotate = `/console/webhooks/${hook.body.id}/rotate-secret`;
    expect((await page(`/console/webhooks/${hook.body.id}`)).html).toMatch(
      /<option value="86400" selected>24 hours \(default\)<\/option>/,
    );
    // Blank must not read as 0 (stop the old secret now); nor may a grace the page does not offer pass.
    for (const grace of ["", "5", "7200.0", " 3600"]) {
      const refused = await post(rotate, { grace });
      expect(refused.status, JSON.stringify(grace)).toBe(400);
      expect(await refused.text()).toContain("Choose one of the offered grace periods.");
    }
    // A form from before the choice carries none: the API's 24 h.
    for (const fields of [{ grace: "3600" }, {}] as Array<Record<string, string>>) {
      const rotated = await post(rotate, fields);
      expect(rotated.status).toBe(303);
      expect(rotated.headers.get("location")).toMatch(new RegExp(`^/console/webhooks/${hook.body.id}/secret/`));
    }
    const audit = await harness.call("GET", `/v3/audit-log?target=${hook.body.id}&limit=100`, OWNER);
    const rotations = audit.body.data.filter((e: { action: string }) => e.action === "webhook.secret-rotated");
    expect(rotations.map((e: { detail: unknown }) => e.detail).reverse()).toEqual([
      { graceSeconds: 3_600 },
      { graceSeconds: 86_400 },
    ]);
  });

  it("rotates the signing key with a grace it offered or at once, refuses any other, and says when each key signs", async () => {
    const keys = async () => (await harness.call("GET", "/v3/webhook-signing-keys", OWNER)).body.data;
    const shown = await page("/console/signing-keys");
    expect(shown.status).toBe(200);
    expect(shown.html).toContain("No signing keys yet.");
    expect(shown.html).toMatch(/<option value="3600" selected>1 hour \(default\)<\/option>/);
    // Blank must not read as 0; nor may a grace the page does not offer pass, nor a scope it does not know.
    for (const fields of [
      { grace: "" },
      { grace: "5" },
      { grace: "3600.0" },
      { immediate: "yes" },
      { scope: "x" },
    ] as Array<Record<string, string>>) {
      const refused = await post("/console/signing-keys/rotate", fields);
      expect(refused.status, JSON.stringify(fields)).toBe(400);
      expect(await refused.text()).toContain("Choose one of the offered grace periods.");
    }
    expect(await keys()).toEqual([]);

    // The account's first key signs at once: nothing to replace.
    const first = await post("/console/signing-keys/rotate", {});
    expect(first.status).toBe(303);
    const firstNotice = new URL(first.headers.get("location")!, "http://localhost").searchParams.get("notice");
    const [made] = await keys();
    expect(firstNotice).toBe(`New key ${made.id} signs now. It is the first key: there was none to replace.`);

    // A form without a grace: the API's hour after the new key signs.
    const planned = await post("/console/signing-keys/rotate", {});
    const location = planned.headers.get("location")!;
    expect(location).toMatch(/^\/console\/signing-keys\?notice=/);
    const [next, old] = await keys();
    expect(Date.parse(old.publishedUntil) - Date.parse(next.signsFrom)).toBe(3_600_000);
    const notice = new URL(location, "http://localhost").searchParams.get("notice")!;
    const clock = (iso: string) => `${iso.slice(0, 16).replace("T", " ")} UTC`;
    expect(notice).toContain(`New key ${next.id} signs from ${clock(next.signsFrom)} (in 5 minutes)`);
    expect(notice).toContain(`The keys it replaces stay published until ${clock(old.publishedUntil)} (in 1 hour)`);
    const listed = await page(location);
    expect(listed.html).toContain(`/webhook-keys/${OWNER.account}/jwks.json`);
    expect(listed.html).toMatch(new RegExp(`<tr id="${next.id}">[\\s\\S]*?status-pending">next</span>: signs at`));
    expect(listed.html).toMatch(
      new RegExp(`<tr id="${old.id}">[\\s\\S]*?status-active">signing</span> until [\\s\\S]*?, then retiring until`),
    );

    // Leaked: the new key signs now, every other key left the set.
    const leaked = await post("/console/signing-keys/rotate", { immediate: "true" });
    const leakedNotice = new URL(leaked.headers.get("location")!, "http://localhost").searchParams.get("notice");
    const [fresh] = await keys();
    expect(leakedNotice).toBe(
      `New key ${fresh.id} signs now. The keys it replaces have left the key set: what they signed no longer verifies.`,
    );
    const after = (await page("/console/signing-keys")).html;
    expect(after.match(/<span>retired<\/span>/g)).toHaveLength(2);
    expect(after.match(/status-active">signing<\/span>/g)).toHaveLength(1);

    // The global webhooks' keys are an admin's.
    expect((await page("/console/signing-keys?scope=global")).status).toBe(403);
    expect((await post("/console/signing-keys/rotate", { scope: "global" })).status).toBe(403);
    const audit = await harness.call("GET", "/v3/audit-log?limit=100", OWNER);
    const rotations = audit.body.data.filter((e: { action: string }) => e.action === "webhook-signing-key.rotated");
    expect(rotations.map((e: { detail: { graceSeconds: number } }) => e.detail.graceSeconds).reverse()).toEqual([
      3_600, 3_600, 0,
    ]);
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
    expect(jar.has("hooklane_session")).toBe(false);
    expect((await page("/console")).status).toBe(401);
    // The old cookie, sent again after sign-out, signs nobody in: the session was revoked, not just forgotten.
    for (const [name, value] of signedIn) jar.set(name, value);
    const reused = await page("/console");
    expect(reused.status).toBe(401);
    expect(reused.html).toContain('action="/console/login"');
    expect(jar.has("hooklane_session")).toBe(false);
    await signIn();
  });

  /** Signs the jar in again with a fresh token of OWNER. */
  const signIn = async () => {
    await page("/console");
    const token = await mintToken(DEVELOPMENT_JWT_SECRET, { sub: "operator", ...OWNER });
    expect((await post("/console/login", { token })).status).toBe(303);
    expect((await page("/console")).status).toBe(200);
  };

  it("treats an expired, unknown, malformed or legacy cookie as no session, and never a 5xx", async () => {
    const id = jar.get("hooklane_session")!;
    const token = await mintToken(DEVELOPMENT_JWT_SECRET, { sub: "operator", ...OWNER });
    const nonce = jar.get("hooklane_console_nonce")!;
    const with_ = (value: string) =>
      app.request("/console", { headers: { cookie: `hooklane_console_nonce=${nonce}; ${value}` } });
    for (const value of [
      `hooklane_session=${"A".repeat(43)}`,
      `hooklane_session=${id.slice(0, -1)}`,
      `hooklane_session=${id}%00`,
      `hooklane_session=${encodeURIComponent("\u0000\uFFFD" + id)}`,
      `hooklane_session=${"x".repeat(5000)}`,
      // A cookie named for https on a plain-http request is not read; nor is the old bearer-token cookie.
      `__Host-hooklane_session=${id}`,
      `hooklane_console=${token}`,
    ]) {
      const response = await with_(value);
      expect(response.status, value).toBe(401);
      expect(await response.text()).toContain('action="/console/login"');
    }
    const legacy = await with_(`hooklane_console=${token}`);
    expect(legacy.headers.getSetCookie().some((line) => /^hooklane_console=;.*Max-Age=0/.test(line))).toBe(true);
    expect((await with_(`hooklane_session=${id}`)).status).toBe(200);

    // Expiry is the database's: a session past expires_at is over, whatever the cookie's Max-Age said.
    await harness.hooklane.database.db.update(consoleSession).set({ expiresAt: new Date(Date.now() - 1_000) });
    expect((await with_(`hooklane_session=${id}`)).status).toBe(401);
    await pruneSessionsTask.run({ hooklane: harness.hooklane, workerId: "console-test", now: () => new Date() });
    expect(await harness.hooklane.database.db.select().from(consoleSession)).toEqual([]);
    jar.delete("hooklane_session");
    await signIn();
  });

  it("gives every sign-in a fresh id, and ends the session the browser brought (no fixation)", async () => {
    const before = jar.get("hooklane_session")!;
    await signIn();
    const after = jar.get("hooklane_session")!;
    expect(after).not.toBe(before);
    const stale = await app.request("/console", {
      headers: { cookie: `hooklane_console_nonce=${jar.get("hooklane_console_nonce")}; hooklane_session=${before}` },
    });
    expect(stale.status).toBe(401);
  });

  it("names the session and form-token cookies __Host- with Secure over https and in production", async () => {
    const token = await mintToken(DEVELOPMENT_JWT_SECRET, { sub: "operator", ...OWNER });
    const production = createApp({
      ...harness.hooklane,
      config: { ...harness.hooklane.config, production: true },
    });
    const expectHostCookie = (line: string | undefined, what: string) => {
      expect(line, what).toBeDefined();
      expect(line, what).toMatch(/; Path=\/;/);
      expect(line, what).toMatch(/; Secure/);
      expect(line, what).toMatch(/; HttpOnly/);
      expect(line, what).toMatch(/; SameSite=Strict/);
      expect(line, what).not.toMatch(/Domain/);
    };
    for (const [what, target, url] of [
      ["https", app, "https://localhost"],
      ["production", production, "http://localhost"],
    ] as const) {
      const form = await target.request(`${url}/console`);
      const nonceLine = form.headers.getSetCookie().find((l) => l.startsWith("__Host-hooklane_console_nonce="));
      expectHostCookie(nonceLine, `${what} nonce`);
      const nonce = /^__Host-hooklane_console_nonce=([^;]+)/.exec(nonceLine!)![1]!;
      const csrfToken = /name="csrf" value="([^"]+)"/.exec(await form.text())![1]!;
      const signIn = (nonceCookie: string) =>
        target.request(`${url}/console/login`, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded", origin: url, cookie: nonceCookie },
          body: new URLSearchParams({ csrf: csrfToken, token }).toString(),
        });
      // The nonce is read by the name it was set with: under the plain name the form token matches nothing.
      expect((await signIn(`hooklane_console_nonce=${nonce}`)).status, what).toBe(403);
      const login = await signIn(`__Host-hooklane_console_nonce=${nonce}`);
      expect(login.status, what).toBe(303);
      const line = login.headers.getSetCookie().find((l) => l.startsWith("__Host-hooklane_session="));
      expectHostCookie(line, `${what} session`);
      const id = /^__Host-hooklane_session=([^;]+)/.exec(line!)![1]!;
      const cookie = `__Host-hooklane_console_nonce=${nonce}; __Host-hooklane_session=${id}`;
      expect((await target.request(`${url}/console`, { headers: { cookie } })).status, what).toBe(200);
      // The plain name is not read where the prefixed one is expected: a sibling cannot shadow it.
      const plain = `__Host-hooklane_console_nonce=${nonce}; hooklane_session=${id}`;
      expect((await target.request(`${url}/console`, { headers: { cookie: plain } })).status, what).toBe(401);
    }
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

  it("says when a token's account does not exist; answers an unknown console path with its own 404 page", async () => {
    const ghost = await mintToken(DEVELOPMENT_JWT_SECRET, { sub: "newcomer", account: "acc_nobody_made" });
    await page("/console");
    const refused = await post("/console/login", { token: ghost });
    expect(refused.status).toBe(401);
    expect(await refused.text()).toContain("That token is for account acc_nobody_made, which does not exist");
    // An admin may sign in for an account of its own that holds no row: it manages the global webhooks.
    const admin = await mintToken(DEVELOPMENT_JWT_SECRET, { sub: "ops", account: "acc_ops_only", admin: true });
    await page("/console");
    expect((await post("/console/login", { token: admin })).status).toBe(303);
    const token = await mintToken(DEVELOPMENT_JWT_SECRET, { sub: "operator", ...OWNER });
    await page("/console");
    expect((await post("/console/login", { token })).status).toBe(303);

    for (const path of ["/console/nothing-here", "/console/webhooks/wh_1/nothing/here"]) {
      const missing = await page(path);
      expect(missing.status, path).toBe(404);
      expect(missing.headers.get("content-type"), path).toContain("text/html");
      expect(missing.html, path).toContain("<h1>Page not found</h1>");
      expect(missing.html, path).toContain('href="/console"');
    }
    const session = await harness.call("POST", "/v3/portal-sessions", {
      ...OWNER,
      body: { frameAncestors: ["https://app.example.com"], expiresIn: 900 },
    });
    const portalMissing = await page(`${new URL(session.body.url).pathname}/no-such-page`);
    expect(portalMissing.status).toBe(404);
    expect(portalMissing.html).toContain("<h1>Page not found</h1>");
  });

  it("names a deleted webhook's notifications without a link, and says why an e-mail was not sent", async () => {
    const hook = await harness.call("POST", "/v3/webhooks", {
      ...OWNER,
      body: { url: `${receiver.url}/soon-gone`, events: ["*"] },
    });
    await notifyOwner(harness.hooklane.database, {
      webhookId: hook.body.id,
      kind: "webhook.disabled",
      detail: { reason: "endpoint answered 410 Gone" },
    });
    await notifyOwnersTask.run({ hooklane: harness.hooklane, workerId: "console-test", now: () => new Date() });
    expect((await harness.call("DELETE", `/v3/webhooks/${hook.body.id}`, OWNER)).status).toBe(200);
    const shown = await page("/console/notifications");
    expect(shown.html).toContain(`<code>${hook.body.id}</code> <small>(deleted)</small>`);
    expect(shown.html).not.toContain(`href="/console/webhooks/${hook.body.id}"`);
    expect(shown.html).toContain("not mailed: no SMTP server is configured");
  });
});
