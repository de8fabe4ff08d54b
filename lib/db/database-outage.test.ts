import { expect, it } from "vitest";
import { capturedLogs } from "../../test/support/captured-logs.ts";
import { createOutageTracker } from "./database-outage.ts";

const refused = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" });

it("tells an outage in one line, however many failures, and another when the database answers again", async () => {
  const { lines, logger } = capturedLogs();
  let reachable = false;
  const tracker = createOutageTracker({
    logger,
    probeEveryMs: 5,
    probe: async () => {
      if (!reachable) throw refused;
    },
  });
  expect(tracker.down).toBe(false);
  await tracker.recovered(); // no outage: at once

  for (let i = 0; i < 50; i++) expect(tracker.report(refused)).toBe(true);
  expect(tracker.down).toBe(true);
  const recovered = tracker.recovered();
  expect(tracker.recovered()).toBe(recovered);
  expect(lines.map((l) => l.msg)).toEqual(["database unreachable; retrying quietly"]);

  reachable = true;
  await recovered;
  expect(tracker.down).toBe(false);
  expect(lines.map((l) => l.msg)).toEqual(["database unreachable; retrying quietly", "database reachable again"]);
  tracker.close();
});

it("leaves any other error to its caller", () => {
  const { lines, logger } = capturedLogs();
  const tracker = createOutageTracker({ logger, probe: async () => {} });
  const syntax = Object.assign(new Error('syntax error at or near "selec"'), { code: "42601" });
  expect(tracker.report(syntax)).toBe(false);
  expect(tracker.down).toBe(false);
  expect(lines).toEqual([]);
  tracker.close();
});

it("releases whoever waits for the end of an outage when it is closed", async () => {
  const { logger } = capturedLogs();
  const tracker = createOutageTracker({ logger, probeEveryMs: 60_000, probe: () => Promise.reject(refused) });
  tracker.report(refused);
  const recovered = tracker.recovered();
  tracker.close();
  await recovered;
  expect(tracker.down).toBe(true);
});
