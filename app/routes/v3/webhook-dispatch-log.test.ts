import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { webhookDispatch } from "../../../lib/db/schema.ts";
import { HARNESS_START_MS, pgliteFactory, startHarness, type Harness } from "../../../test/support/harness.ts";
import { exhaustedDispatches } from "../../../test/support/outage-dispatches.ts";

const OWNER = { account: "acc_log_filters" };

describe("the delivery log's filters", () => {
  let harness: Harness;
  let hook: string;

  beforeAll(async () => {
    harness = await startHarness(pgliteFactory, { lane: false });
    await harness.accounts(OWNER.account);
    hook = (
      await harness.call("POST", "/v3/webhooks", {
        ...OWNER,
        body: { url: "http://127.0.0.1:8081/never", events: ["*"] },
      })
    ).body.id;
    const rows = exhaustedDispatches(hook, OWNER.account, 3, 30, "log");
    await harness.hooklane.database.db
      .insert(webhookDispatch)
      .values([...rows, { ...rows[0]!, eventId: "evt_other_type", eventType: "webhook.test" }]);
  }, HARNESS_START_MS);
  afterAll(() => harness?.close());

  const events = async (query: string) => {
    const answer = await harness.call("GET", `/v3/webhooks/${hook}/dispatches?${query}`, OWNER);
    expect(answer.status, query).toBe(200);
    return answer.body.data.map((d: { event: { id: string } }) => d.event.id).sort();
  };

  it("finds by event type, event id and resource id, alone or together", async () => {
    expect(await events("")).toHaveLength(4);
    expect(await events("eventType=webhook.test")).toEqual(["evt_other_type"]);
    expect(await events("eventType=payment-debt.created")).toEqual([
      "evt_log_000000",
      "evt_log_000001",
      "evt_log_000002",
    ]);
    expect(await events("eventId=evt_log_000001")).toEqual(["evt_log_000001"]);
    expect(await events("resourceId=pd_log_2")).toEqual(["evt_log_000002"]);
    expect(await events("resourceId=pd_log_0&eventType=webhook.test")).toEqual(["evt_other_type"]);
    expect(await events("resourceId=pd_log_0&status=success")).toEqual([]);
    expect(await events("eventId=evt_nobody")).toEqual([]);
  });
});
