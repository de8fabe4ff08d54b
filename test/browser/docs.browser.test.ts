import { exampleAsDelivered } from "../../lib/webhook/catalogue/catalogue-entry.ts";
import { Validator } from "@seriousme/openapi-schema-validator";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CATALOGUE } from "../../lib/webhook/catalogue/webhook-event-catalogue.ts";
import { HARNESS_START_MS } from "../support/harness.ts";
import {
  hasChromium,
  screenshot,
  seriousViolations,
  startBrowserFixture,
  widths,
  type BrowserFixture,
} from "../support/browser.ts";

describe.skipIf(!hasChromium())("/docs in a browser", () => {
  let fixture: BrowserFixture;
  beforeAll(async () => {
    fixture = await startBrowserFixture();
  }, HARNESS_START_MS);
  afterAll(() => fixture?.close());

  it("shows every operation with an example and every event type with its payload schema; the document is OpenAPI 3.1 and its webhooks are the catalogue", async () => {
    const document: any = await (await fetch(`${fixture.origin}/openapi.json`)).json();
    const validator = new Validator();
    const result = await validator.validate(document);
    expect(result.errors ?? []).toEqual([]);
    expect(validator.version).toBe("3.1");
    // The catalogue, and the test event every webhook can be sent.
    expect(Object.keys(document.webhooks).sort()).toEqual(
      [...CATALOGUE.map((entry) => entry.internal), "webhook.test"].sort(),
    );
    for (const entry of CATALOGUE) {
      expect(document.webhooks[entry.internal].post.requestBody.content["application/json"].example).toEqual(
        exampleAsDelivered(entry.example),
      );
    }
    expect(JSON.stringify(document)).not.toContain("9007199254740991");

    const page = await fixture.page();
    await page.goto(`${fixture.origin}/docs`);
    await screenshot(page, "6-docs", { fullPage: false });
    const missing: string[] = [];
    for (const [path, operations] of Object.entries(document.paths as Record<string, Record<string, any>>)) {
      for (const [method, operation] of Object.entries(operations)) {
        const section = page.locator(`[id="${operation.operationId}"]`);
        const request = await section
          .locator("pre.example-request")
          .innerText()
          .catch(() => "");
        if (
          !request.startsWith(`curl -X ${method.toUpperCase()} "$HOOKLANE_API${path.replace(/\{(\w+)\}/g, "<$1>")}"`)
        ) {
          missing.push(`${operation.operationId}: request example`);
        }
        const body = operation.requestBody?.content["application/json"];
        if (body && !request.includes(JSON.stringify(body.example)))
          missing.push(`${operation.operationId}: request body`);
        const response = await section
          .locator("pre.example-response")
          .innerText()
          .catch(() => "");
        if (!/^HTTP 2\d\d/.test(response)) missing.push(`${operation.operationId}: response example`);
        const [status, answer] = Object.entries(operation.responses as Record<string, any>).find(([s]) =>
          s.startsWith("2"),
        )!;
        const example = answer.content?.["application/json"]?.example;
        if (
          example !== undefined &&
          JSON.stringify(JSON.parse(response.replace(`HTTP ${status}`, ""))) !== JSON.stringify(example)
        ) {
          missing.push(`${operation.operationId}: response example differs from the document's`);
        }
      }
    }
    for (const entry of CATALOGUE) {
      const section = page.locator(`[id="event-${entry.internal}"]`);
      const payload = await section
        .locator("pre.example-payload")
        .innerText()
        .catch(() => "{}");
      if (JSON.stringify(JSON.parse(payload)) !== JSON.stringify(exampleAsDelivered(entry.example)))
        missing.push(`${entry.internal}: example`);
      const schema = await section
        .locator(".payload-schema")
        .innerText()
        .catch(() => "");
      if (!schema.includes(`always "${entry.internal}"`) || !schema.includes("EventBody"))
        missing.push(`${entry.internal}: schema`);
    }
    expect(missing).toEqual([]);
    for (const language of ["Node", "Python", "Go"]) {
      expect(await page.getByLabel(`${language} snippet`).innerText()).toMatch(/hmac|Hmac/i);
    }
    expect(await page.locator("#errors + p + table tr").count()).toBeGreaterThan(5);
    expect(await seriousViolations(page)).toEqual([]);
  });

  it("reads as a reference: navigation in view while scrolling, a link to every operation, fields as tables, no raw schema JSON, fits 375 px", async () => {
    const document: any = await (await fetch(`${fixture.origin}/openapi.json`)).json();
    const page = await fixture.page({ width: 1280 });
    await page.goto(`${fixture.origin}/docs`);
    const nav = page.getByRole("navigation", { name: "Contents" });
    const unlinked: string[] = [];
    for (const operations of Object.values<any>(document.paths)) {
      for (const operation of Object.values<any>(operations)) {
        const link = nav.locator(`a[href="#${operation.operationId}"]`);
        if ((await link.count()) !== 1) unlinked.push(`${operation.operationId}: no link`);
        if ((await page.locator(`[id="${operation.operationId}"]`).count()) !== 1)
          unlinked.push(`${operation.operationId}: no section`);
      }
    }
    expect(unlinked).toEqual([]);
    // Far down the page, the navigation is still on screen, and a link in it still goes where it says.
    await page.locator("#schemas").scrollIntoViewIfNeeded();
    const box = await nav.boundingBox();
    expect(box!.y).toBeGreaterThanOrEqual(0);
    expect(box!.y).toBeLessThan(50);
    const last = Object.values<any>(document.paths)
      .flatMap((ops) => Object.values<any>(ops))
      .at(-1).operationId;
    await nav.locator(`a[href="#${last}"]`).click();
    expect(page.url()).toContain(`#${last}`);
    expect(await page.locator(`[id="${last}"]`).isVisible()).toBe(true);
    await screenshot(page, "6-docs-scrolled", { fullPage: false });
    // Fields are tables, with their descriptions; nothing prints a schema as JSON.
    const text = await page.locator("main").innerText();
    expect(text).not.toMatch(/"(\$ref|properties|additionalProperties|anyOf)"\s*:/);
    expect(text).not.toMatch(/"type"\s*:\s*"(object|string|array|integer)"/);
    const webhookFields = page.locator("#schema-Webhook table.fields");
    expect(await webhookFields.locator("tr").count()).toBeGreaterThan(10);
    expect(await seriousViolations(page)).toEqual([]);

    const phone = await fixture.page({ width: 375 });
    await phone.goto(`${fixture.origin}/docs`);
    const { scrollWidth, clientWidth } = await widths(phone);
    expect(scrollWidth).toBeLessThanOrEqual(clientWidth);
    expect(await seriousViolations(phone)).toEqual([]);
    await screenshot(phone, "6-docs-375", { fullPage: false });
    console.log(
      `[docs] ${document.paths ? Object.keys(document.paths).length : 0} paths linked; nav at y=${box!.y} after scrolling; 375 px: ${scrollWidth}/${clientWidth}`,
    );
  });
});
