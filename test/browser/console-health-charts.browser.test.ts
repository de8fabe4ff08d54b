import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { latencyBucket } from "../../lib/db/sql/latency-histogram.ts";
import { HARNESS_START_MS } from "../support/harness.ts";
import {
  hasChromium,
  screenshot,
  SCREENSHOTS,
  seriousViolations,
  startBrowserFixture,
  widths,
  type BrowserFixture,
} from "../support/browser.ts";

const ACCOUNT = "acc_browser_charts";

describe.skipIf(!hasChromium())("endpoint health as pictures: 24 h and 7 days, per webhook and per account", () => {
  let fixture: BrowserFixture;
  let webhookId: string;
  const seeded = { attempts: 0, succeeded: 0 };

  beforeAll(async () => {
    fixture = await startBrowserFixture();
    await fixture.harness.accounts(ACCOUNT);
    const created = await fixture.harness.call("POST", "/v3/webhooks", {
      account: ACCOUNT,
      body: { url: "https://hooks.example.com/charts", events: ["*"] },
    });
    webhookId = created.body.id;
    // Seven days of hourly rollups with mixed outcomes: a busy day rhythm, an outage on day 3 (most attempts
    // failing, slow), a slow afternoon on day 5, and a quiet gap; two duration buckets per hour.
    const rows: string[] = [];
    for (let h = 0; h < 7 * 24; h++) {
      if (h >= 36 && h < 48) continue; // nothing attempted for twelve hours
      const attempts = 20 + Math.round(15 * Math.sin((h / 24) * 2 * Math.PI)) + (h % 5);
      const outage = h >= 72 && h < 84;
      const slow = h >= 116 && h < 122;
      const succeeded = outage ? Math.round(attempts * 0.2) : attempts - (h % 7 === 0 ? 2 : 0);
      const fast = latencyBucket(outage ? 1_800 : slow ? 900 : 80 + (h % 9) * 10);
      const tail = latencyBucket(outage ? 9_000 : slow ? 2_500 : 400);
      const tailCount = Math.max(1, Math.round(attempts * 0.1));
      const tailOk = Math.min(tailCount, Math.max(0, succeeded - (attempts - tailCount)));
      rows.push(
        `('${webhookId}', date_trunc('hour', now()) - interval '${h} hours', ${fast}, ${attempts - tailCount}, ${succeeded - tailOk})`,
        `('${webhookId}', date_trunc('hour', now()) - interval '${h} hours', ${tail}, ${tailCount}, ${tailOk})`,
      );
      seeded.attempts += attempts;
      seeded.succeeded += succeeded;
    }
    await fixture.harness.hooklane.database.rows(
      sql.raw(
        `insert into webhook_health_hour (webhook_id, hour, bucket, attempts, succeeded) values ${rows.join(",")}`,
      ),
    );
  }, HARNESS_START_MS);
  afterAll(() => fixture?.close());

  const api = (path: string) => fixture.harness.call("GET", path, { account: ACCOUNT });

  it("answers the history slot by slot from the rollups, per webhook and summed per account", async () => {
    const week = (await api(`/v3/health-history?window=7d&webhook=${webhookId}`)).body;
    expect(week).toMatchObject({ object: "health-history", webhook: webhookId, window: "7d", slotHours: 6 });
    expect(week.slots).toHaveLength(28);
    const [covered] = await fixture.harness.hooklane.database.rows<{ attempts: string; succeeded: string }>(sql`
      select sum(attempts) as attempts, sum(succeeded) as succeeded from webhook_health_hour
      where webhook_id = ${webhookId} and hour >= ${week.slots[0].start}::timestamptz`);
    const sum = (slots: Array<{ attempts: number; failed: number }>, key: "attempts" | "failed") =>
      slots.reduce((total, slot) => total + slot[key], 0);
    expect(sum(week.slots, "attempts")).toBe(Number(covered!.attempts));
    expect(sum(week.slots, "attempts") - sum(week.slots, "failed")).toBe(Number(covered!.succeeded));
    // The outage reads as slow and failing; the quiet hours as no latency at all.
    const worst = week.slots.reduce((a: any, b: any) =>
      b.failed / (b.attempts || 1) > a.failed / (a.attempts || 1) ? b : a,
    );
    expect(worst.failed / worst.attempts).toBeGreaterThan(0.5);
    expect(worst.latencyMs.p95).toBeGreaterThan(5_000);
    const day = (await api(`/v3/health-history?webhook=${webhookId}`)).body;
    expect(day).toMatchObject({ window: "24h", slotHours: 1 });
    expect(day.slots).toHaveLength(24);
    expect(day.slots.at(-1).attempts).toBeGreaterThan(0);
    const account = (await api("/v3/health-history?window=7d")).body;
    expect(account).toMatchObject({ account: ACCOUNT, webhook: null });
    expect(account.slots).toEqual(week.slots);
    // Another account reads neither this webhook's history nor this account's sum.
    const other = await fixture.harness.call("GET", `/v3/health-history?webhook=${webhookId}`, {
      account: "acc_other",
    });
    expect(other.status).toBe(404);
    expect((await fixture.harness.call("GET", "/v3/health-history", { account: "acc_other" })).body.slots).toEqual(
      Array.from({ length: 24 }, (_, i) =>
        expect.objectContaining({ attempts: 0, latencyMs: null, start: day.slots[i].start }),
      ),
    );
    const refused = await api("/v3/health-history?window=30d");
    expect(refused.status).toBe(422);
    console.log(
      `[charts] seeded ${seeded.attempts} attempts (${seeded.attempts - seeded.succeeded} failed) over 7 days; ` +
        `7d window holds ${sum(week.slots, "attempts")}, worst slot ${worst.failed}/${worst.attempts} failed, p95 ${worst.latencyMs.p95} ms`,
    );
  });

  for (const width of [375, 1280]) {
    it(`draws both windows on the webhook's page and the account's at ${width} px, legible and accessible`, async () => {
      const page = await fixture.page({ width });
      await fixture.signIn(page, ACCOUNT);
      for (const [name, path] of [
        ["webhook", `/console/webhooks/${webhookId}`],
        ["account", "/console"],
      ] as const) {
        await page.goto(`${fixture.origin}${path}`);
        const charts = page.locator("svg.chart");
        expect(await charts.count()).toBe(2);
        const labels = await charts.evaluateAll((svgs) => svgs.map((svg) => svg.querySelector("title")!.textContent));
        expect(labels).toEqual(["Deliveries and latency, last 24 hours", "Deliveries and latency, last 7 days"]);
        const week = charts.nth(1);
        // A bar per slot with attempts (the quiet hours leave a gap), a red part where some failed, and both
        // latency lines broken at the gap.
        const slots: Array<{ attempts: number; failed: number }> = (
          await api(`/v3/health-history?window=7d${name === "webhook" ? `&webhook=${webhookId}` : ""}`)
        ).body.slots;
        const runs = slots.filter((s, i) => s.attempts > 0 && (i === 0 || slots[i - 1]!.attempts === 0)).length;
        expect(runs).toBeGreaterThanOrEqual(2);
        expect(await week.locator(`rect[fill="#1a7f37"]`).count()).toBe(slots.filter((s) => s.attempts > 0).length);
        expect(await week.locator(`rect[fill="#c62828"]`).count()).toBe(slots.filter((s) => s.failed > 0).length);
        expect(await week.locator("polyline").count()).toBe(2 * runs);
        expect(await page.locator("figure.chart figcaption").first().innerText()).toMatch(
          /attempts in the last 24 hours/,
        );
        // Legible: the axis text is drawn at 9 px or more on screen, whatever the width.
        const box = await week.boundingBox();
        const textPx = (11 * box!.width) / 360;
        expect(textPx).toBeGreaterThanOrEqual(9);
        const { scrollWidth, clientWidth } = await widths(page);
        expect(scrollWidth).toBeLessThanOrEqual(clientWidth);
        expect(await seriousViolations(page)).toEqual([]);
        console.log(
          `[charts] ${name} at ${width} px: chart ${Math.round(box!.width)} px wide, text ${textPx.toFixed(1)} px`,
        );
        await page.locator("div.charts").screenshot({ path: `${SCREENSHOTS}7-charts-${name}-${width}.png` });
      }
      await screenshot(page, `7-charts-page-${width}`);
    });
  }
});
