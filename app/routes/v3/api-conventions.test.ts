import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HARNESS_START_MS, pgliteFactory, startHarness, type Harness } from "../../../test/support/harness.ts";
import {
  createRouteFixture,
  PROBE_ACCOUNT,
  ROUTE_PROBES,
  V3_ROUTES,
  type RouteFixture,
} from "../../../test/support/route-probes.ts";
import { v3Routes } from "./index.ts";

const OPERATIONS = new Map(v3Routes().operations.map((spec) => [`${spec.method.toUpperCase()} ${spec.path}`, spec]));

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const CAMEL_CASE = /^[a-z][A-Za-z0-9]*$/;
const PREFIXED_ID = /^[a-z]+_[A-Za-z0-9_-]+$/;

/** Every key camelCase, never `…At`; every date-time string in the one format; no JSON hidden in a string. */
function checkFields(value: unknown, where: string): void {
  if (typeof value === "string") {
    if (/^\d{4}-\d{2}-\d{2}T/.test(value)) expect(value, where).toMatch(ISO);
    if (/^\s*[{[]/.test(value)) expect(() => JSON.parse(value), `${where} holds JSON as a string`).toThrow();
    return;
  }
  if (Array.isArray(value)) return value.forEach((item, i) => checkFields(item, `${where}[${i}]`));
  if (value === null || typeof value !== "object") return;
  for (const [key, item] of Object.entries(value)) {
    expect(key, `${where}.${key}`).toMatch(CAMEL_CASE);
    expect(key, `${where}.${key}`).not.toMatch(/At$/);
    checkFields(item, `${where}.${key}`);
  }
}

/** Computed views (of the lane, of a revocation), not stored objects: `object` and the field conventions, but no `id` or `created`. */
const REPORTS = new Set([
  "lane",
  "webhook-health",
  "health-history",
  "listen-results",
  "portal-session-revocation",
  "webhook-filter-preview",
]);

/** A resource: `id` (prefixed, except an event type's, which is its name), `object`, `created` in ISO. */
function checkResource(resource: Record<string, unknown>, where: string): void {
  expect(typeof resource.object, `${where}: object`).toBe("string");
  expect(resource.object, where).not.toBe("list");
  if (REPORTS.has(resource.object as string)) return checkFields(resource, where);
  expect(typeof resource.id, `${where}: id`).toBe("string");
  if (resource.object !== "webhook-event-type") expect(resource.id, `${where}: id`).toMatch(PREFIXED_ID);
  if (resource.deleted === true) {
    expect(Object.keys(resource).sort(), where).toEqual(["deleted", "id", "object"]);
    return;
  }
  expect(resource.created, `${where}: created`).toMatch(ISO);
  checkFields(resource, where);
}

/** Every answer is a resource or a list of them, in the one list shape. */
function checkAnswer(body: Record<string, unknown>, where: string): void {
  if (body.object !== "list") return checkResource(body, where);
  expect(Object.keys(body).sort(), where).toEqual(["data", "nextCursor", "object"]);
  expect(Array.isArray(body.data), where).toBe(true);
  (body.data as Array<Record<string, unknown>>).forEach((item, i) => checkResource(item, `${where} data[${i}]`));
}

describe("one convention for every resource and list", () => {
  it("has a probe for every route of the app, and none for a route it lacks", () => {
    expect(V3_ROUTES.length).toBeGreaterThanOrEqual(30);
    expect(V3_ROUTES.filter((route) => !(route in ROUTE_PROBES))).toEqual([]);
    expect(Object.keys(ROUTE_PROBES).filter((route) => !V3_ROUTES.includes(route))).toEqual([]);
  });

  describe("on the app's route table", () => {
    let harness: Harness;
    let fixture: RouteFixture;
    /** Each list probed, and whether its probe calls as an admin (an admin-only list). */
    const lists: Array<{ path: string; admin: boolean }> = [];

    beforeAll(async () => {
      harness = await startHarness(pgliteFactory, { lane: false });
      fixture = await createRouteFixture(harness);
    }, HARNESS_START_MS);
    afterAll(() => harness?.close());

    it("answers every route with its documented schema: object, id, created in ISO, camelCase, JSON as JSON", async () => {
      for (const route of V3_ROUTES) {
        const method = route.split(" ")[0]!;
        const request = await ROUTE_PROBES[route]!(harness, fixture);
        const answer = await harness.call(method, request.path, {
          account: PROBE_ACCOUNT,
          admin: request.admin ?? false,
          ...(request.body ? { body: request.body } : {}),
        });
        expect(answer.status, `${route}: ${answer.text}`).toBeGreaterThanOrEqual(200);
        expect(answer.status, `${route}: ${answer.text}`).toBeLessThan(300);
        const documented = OPERATIONS.get(route)!.responses[answer.status];
        expect(documented, `${route} answers ${answer.status}, which it does not document`).toBeDefined();
        if (documented!.mediaType) {
          // A stream (server-sent events): its own media type, no JSON body to check.
          expect(answer.headers.get("content-type"), route).toMatch(new RegExp(`^${documented!.mediaType}`));
          continue;
        }
        expect(answer.headers.get("content-type"), route).toMatch(/^application\/json/);
        // Strict schemas: a field the documentation lacks (a leaked column) fails here.
        const schema = documented!.schema;
        expect(schema!.safeParse(answer.body).error, route).toBeUndefined();
        checkAnswer(answer.body, route);
        if (answer.body.object === "list") lists.push({ path: request.path, admin: request.admin ?? false });
      }
      expect(lists.length).toBe(13);
    });

    it("pages every list the same way: limit, then cursor, until nextCursor is null", async () => {
      let admin = false;
      const get = async (path: string) => {
        const answer = await harness.call("GET", path, { account: PROBE_ACCOUNT, admin });
        expect(answer.status, `${path}: ${answer.text}`).toBe(200);
        return answer.body as { data: Array<{ id: string }>; nextCursor: string | null };
      };
      // A list probed with a query of its own (a search) takes the paging parameters after it.
      const at = (path: string, query: string) => `${path}${path.includes("?") ? "&" : "?"}${query}`;
      for (const list of lists) {
        const { path } = list;
        admin = list.admin;
        const all = (await get(at(path, "limit=100"))).data.map((item) => item.id);
        expect(all.length, path).toBeGreaterThanOrEqual(2);
        const paged: string[] = [];
        let cursor: string | null = null;
        for (let page = 0; page <= all.length; page++) {
          const body = await get(at(path, `limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`));
          expect(body.data.length, path).toBeLessThanOrEqual(1);
          paged.push(...body.data.map((item) => item.id));
          cursor = body.nextCursor;
          if (!cursor) break;
        }
        expect(cursor, `${path}: still more pages`).toBeNull();
        expect(paged, path).toEqual(all);
        const unknown = await harness.call("GET", at(path, "cursor=nope_0"), { account: PROBE_ACCOUNT, admin });
        expect(unknown.status, path).toBe(422);
        expect(unknown.body.errors, path).toEqual([{ field: "cursor", message: "unknown cursor" }]);
        const tooMany = await harness.call("GET", at(path, "limit=101"), { account: PROBE_ACCOUNT, admin });
        expect(tooMany.body.errors, path).toEqual([{ field: "limit", message: "must be at most 100" }]);
      }
    });
  });
});
