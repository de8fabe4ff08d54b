import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mintToken } from "../../lib/auth/jwt.ts";
import { DEVELOPMENT_JWT_SECRET } from "../../lib/config/env.ts";
import { eventually } from "../../test/support/eventually.ts";
import { HARNESS_START_MS, pgliteFactory, startHarness, type Harness } from "../../test/support/harness.ts";
import { startReceiver, type TestReceiver } from "../../test/support/receiver.ts";
import { createApp } from "../app.ts";

const OWNER = { account: "acc_console" };

describe("the console", () => {
  let harness: Harness;
  let receiver: TestReceiver;
  let app: ReturnType<typeof createApp>;
  let cookie: string;
  const answers = new Map<string, number>();

  beforeAll(async () => {
    receiver = await startReceiver((post) => ({ status: answers.get(post.path) ?? 200 }));
    harness = await startHarness(pgliteFactory, { env: { WEBHOOK_TIMEOUT_MS: "10000" } });
    app = createApp(harness.hooklane);
  }, HARNESS_START_MS);
  afterAll(async () => {
    await harness?.close();
    await receiver?.close();
  });

  const form = (fields: Record<string, string>) => ({
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", ...(cookie ? { cookie } : {}) },
    body: new URLSearchParams(fields).toString(),
  });
  const page = async (path: string) => {
    const response = await app.request(path, { headers: cookie ? { cookie } : {} });
    return { status: response.status, html: await response.text() };
  };

  it("asks for a token, refuses a bad one, and keeps a good one in an HttpOnly, SameSite=Strict cookie", async () => {
    expect((await page("/console")).status).toBe(401);
    expect((await page("/console")).html).toContain('action="/console/login"');
    const refused = await app.request("/console/login", form({ token: "not-a-jwt" }));
    expect(refused.status).toBe(401);
    expect(await refused.text()).toContain("not accepted");

    const token = await mintToken(DEVELOPMENT_JWT_SECRET, { sub: "operator", ...OWNER });
    const accepted = await app.request("/console/login", form({ token }));
    expect(accepted.status).toBe(303);
    const setCookie = accepted.headers.get("set-cookie")!;
    expect(setCookie).toMatch(/HttpOnly/);
    expect(setCookie).toMatch(/SameSite=Strict/);
    expect(setCookie).toMatch(/Path=\/console/);
    cookie = setCookie.split(";")[0]!;
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
    expect(row).toMatch(/<td>6<\/td>\s*<td>500<\/td>\s*<td>—<\/td>/);
    expect(row).toContain(`action="/console/dispatches/${test.body.id}/retry"`);

    answers.set("/failing", 200);
    const retried = await app.request(`/console/dispatches/${test.body.id}/retry`, form({ webhook: hook.body.id }));
    expect(retried.status).toBe(303);
    expect(retried.headers.get("location")).toMatch(new RegExp(`^/console/webhooks/${hook.body.id}\\?notice=`));
    await eventually(
      () => harness.call("GET", `/v3/webhook-dispatches/${test.body.id}`, OWNER).then((r) => r.body),
      (dispatch) => dispatch.status === "success" && dispatch.run === 2,
    );

    const recover = await app.request(`/console/webhooks/${hook.body.id}/recover`, form({ hours: "24" }));
    expect(recover.status).toBe(303);
    const location = recover.headers.get("location")!;
    expect(location).toMatch(/\?recovery=whr_/);
    expect((await page(location)).html).toMatch(/Recovery <code>whr_[a-f0-9]+<\/code>/);
  });

  it("reaches only what the token may: another account's webhook is not found", async () => {
    const other = await harness.call("POST", "/v3/webhooks", {
      account: "acc_someone_else",
      body: { url: `${receiver.url}/theirs`, events: ["*"] },
    });
    const response = await page(`/console/webhooks/${other.body.id}`);
    expect(response.status).toBe(404);
    expect(response.html).not.toContain("/theirs");
    const forged = await app.request(`/console/webhooks/${other.body.id}/recover`, form({ hours: "24" }));
    expect(forged.status).toBe(404);
  });
});
