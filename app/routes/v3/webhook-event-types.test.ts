import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { applyCatalogueSync } from "../../../lib/webhook/catalogue/catalogue-sync.ts";
import { CATALOGUE } from "../../../lib/webhook/catalogue/webhook-event-catalogue.ts";
import { pgliteFactory, startHarness, type Harness } from "../../../test/support/harness.ts";
import { createApp } from "../../app.ts";

// The harness syncs the catalogue on start (CATALOGUE_AUTO_SYNC is on outside production).
let harness: Harness;
beforeAll(async () => {
  harness = await startHarness(pgliteFactory, { lane: false });
  await harness.accounts("acc_test");
});
afterAll(() => harness.close());

const subscribe = (events: string[]) =>
  harness.call("POST", "/v3/webhooks", { body: { url: "http://127.0.0.1:4000/hook", events } });

describe("GET /v3/webhook-event-types", () => {
  it("lists the catalogue's events as subscribers see them", async () => {
    const response = await harness.call("GET", "/v3/webhook-event-types");
    expect(response.status).toBe(200);
    expect(response.body).toEqual({
      object: "list",
      data: CATALOGUE.filter((entry) => !entry.deprecated)
        .sort((a, b) => (a.internal < b.internal ? -1 : 1))
        .map((entry) => ({
          id: entry.internal,
          object: "webhook-event-type",
          description: entry.description,
          resource: entry.resource,
          ownerKind: entry.owner.kind,
          attributes: entry.attributes?.columns ?? [],
          example: { ...entry.example, object: "event", sequence: 1 },
          since: entry.since,
          deprecated: false,
          created: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
          updated: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
        })),
      nextCursor: null,
    });
    expect(JSON.stringify(response.body)).not.toMatch(/"route"|"table"|"column"/);
  });

  it("pages by name with limit and cursor", async () => {
    const all = (await harness.call("GET", "/v3/webhook-event-types")).body.data.map((type: any) => type.id);
    const first = await harness.call("GET", "/v3/webhook-event-types?limit=5");
    expect(first.body.data.map((type: any) => type.id)).toEqual(all.slice(0, 5));
    const second = await harness.call("GET", `/v3/webhook-event-types?limit=100&cursor=${first.body.nextCursor}`);
    expect(second.body).toMatchObject({ nextCursor: null });
    expect(second.body.data.map((type: any) => type.id)).toEqual(all.slice(5));
    const unknown = await harness.call("GET", "/v3/webhook-event-types?cursor=payment-debt.exploded");
    expect(unknown.status).toBe(422);
    expect(unknown.body.errors).toEqual([{ field: "cursor", message: "unknown cursor" }]);
  });

  it("needs a bearer token like every /v3 route", async () => {
    const response = await createApp(harness.hooklane).request("/v3/webhook-event-types");
    expect(response.status).toBe(401);
  });
});

describe("subscribing to event types", () => {
  it("answers 422 naming an unknown event and where it is in the request", async () => {
    const response = await subscribe(["payment-debt.created", "payment-debt.exploded"]);
    expect(response.status).toBe(422);
    expect(response.body).toMatchObject({
      detail:
        "events[1]: payment-debt.exploded is not an event type you can subscribe to (GET /v3/webhook-event-types lists them)",
      errors: [{ field: "events[1]" }],
    });
  });

  it("accepts listed events and `*`", async () => {
    expect((await subscribe(["payment-debt.created", "payment-debt.created"])).body.events).toEqual([
      "payment-debt.created",
    ]);
    expect((await subscribe(["*"])).status).toBe(201);
  });

  it("refuses a deprecated event, which the listing no longer shows", async () => {
    const { outcome } = await applyCatalogueSync(
      harness.hooklane.database,
      CATALOGUE.filter((entry) => entry.internal !== "general.address.purged"),
    );
    expect(outcome).toBe("applied");
    const listed = (await harness.call("GET", "/v3/webhook-event-types")).body.data.map((type: any) => type.id);
    expect(listed).not.toContain("general.address.purged");
    expect(listed).toHaveLength(CATALOGUE.length - 1);
    const response = await subscribe(["general.address.purged"]);
    expect(response.status).toBe(422);
    expect(response.body.detail).toContain(
      "events[0]: general.address.purged is not an event type you can subscribe to",
    );
  });
});
