import { serve, type ServerType } from "@hono/node-server";
import axe from "axe-core";
import { mkdirSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { chromium, type Browser, type Page } from "playwright-core";
import { createApp } from "../../app/app.ts";
import { mintToken } from "../../lib/auth/jwt.ts";
import { DEVELOPMENT_JWT_SECRET } from "../../lib/config/env.ts";
import { pgliteFactory, startHarness, type Harness } from "./harness.ts";
import { CHROMIUM, has } from "./optional-tools.ts";

export { CHROMIUM } from "./optional-tools.ts";
export const SCREENSHOTS = fileURLToPath(new URL("../browser/screenshots/", import.meta.url));

/** The app on a real loopback port (the lane in-process), and a headless Chromium to drive it. */
export interface BrowserFixture {
  harness: Harness;
  /** `http://127.0.0.1:<port>` */
  origin: string;
  browser: Browser;
  /** A fresh browser context and page, optionally at a phone's width. */
  page(options?: { width?: number }): Promise<Page>;
  /** Signs `page` in to the console with a token for `account`. */
  signIn(page: Page, account: string): Promise<void>;
  close(): Promise<void>;
}

export async function startBrowserFixture(env: Record<string, string> = {}): Promise<BrowserFixture> {
  const harness = await startHarness(pgliteFactory, { env });
  const app = createApp(harness.hooklane);
  const server: ServerType = await new Promise((resolve) => {
    const s = serve({ fetch: app.fetch, hostname: "127.0.0.1", port: 0 }, () => resolve(s));
  });
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
  mkdirSync(SCREENSHOTS, { recursive: true });
  return {
    harness,
    origin,
    browser,
    async page({ width = 1280 } = {}) {
      const phone = width < 600;
      const context = await browser.newContext({ viewport: { width, height: 800 }, isMobile: phone, hasTouch: phone });
      return context.newPage();
    },
    async signIn(page, account) {
      await harness.accounts(account);
      const token = await mintToken(DEVELOPMENT_JWT_SECRET, { sub: "browser", account, admin: false });
      await page.goto(`${origin}/console`);
      await page.getByLabel("API bearer token").fill(token);
      await page.getByRole("button", { name: "Sign in" }).click();
      await page.waitForURL(`${origin}/console`);
    },
    async close() {
      await browser.close();
      await new Promise((resolve) => server.close(resolve));
      await harness.close();
    },
  };
}

/** Whether the machine has the browser (CI installs it; a developer without it skips the browser suites). */
export const hasChromium = () => has("chromium");

/** Violations axe-core rates serious or critical on the page as it is now. */
export async function seriousViolations(page: Page): Promise<string[]> {
  // Evaluated through the DevTools protocol: the page's CSP (no script at all) stays as it is.
  await page.evaluate(axe.source);
  // Expressions as text: they run in the page, which has the DOM this project's types leave out.
  const results = (await page.evaluate(`axe.run(document, { resultTypes: ["violations"] })`)) as axe.AxeResults;
  return results.violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(" ")).join("; ")})`);
}

/** The page's horizontal overflow: the document's scroll width and client width. */
export async function widths(page: Page): Promise<{ scrollWidth: number; clientWidth: number }> {
  return page.evaluate(
    `({ scrollWidth: document.documentElement.scrollWidth, clientWidth: document.documentElement.clientWidth })`,
  );
}

/** Saves the page (all of it, unless `fullPage` is false) under test/browser/screenshots/. */
export async function screenshot(page: Page, name: string, { fullPage = true } = {}): Promise<void> {
  await page.screenshot({ path: `${SCREENSHOTS}${name}.png`, fullPage });
}
