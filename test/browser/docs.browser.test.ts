import { Validator } from "@seriousme/openapi-schema-validator";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CATALOGUE } from "../../lib/webhook/catalogue/webhook-event-catalogue.ts";
import { HARNESS_START_MS } from "../support/harness.ts";
import {
  hasChromium,
  screenshot,
  seriousViolations,
  startBrowserFixture,
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
        entry.example,
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
      if (JSON.stringify(JSON.parse(payload)) !== JSON.stringify(entry.example))
        missing.push(`${entry.internal}: example`);
      const schema = await section
        .locator("pre")
        .first()
        .innerText()
        .catch(() => "");
      if (!schema.includes(`"const": "${entry.internal}"`) || !schema.includes('"EventBody"'))
        missing.push(`${entry.internal}: schema`);
    }
    expect(missing).toEqual([]);
    for (const language of ["Node", "Python", "Go"]) {
      expect(await page.getByLabel(`${language} snippet`).innerText()).toMatch(/hmac|Hmac/i);
    }
    expect(await page.locator("#errors + p + table tr").count()).toBeGreaterThan(5);
    expect(await seriousViolations(page)).toEqual([]);
  });
});
