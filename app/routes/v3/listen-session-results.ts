import type { OperationRouter } from "../../../lib/api/operation.ts";
import { recordListenReports } from "../../../lib/webhook/listen/listen-reports.ts";
import { findListenSession, listenBreaker } from "../../../lib/webhook/listen/listen-session.ts";
import { listenReportsAnswer, listenReportsBody, listenSessionIdParams } from "./listen-session-schemas.ts";

/**
 * `POST /v3/listen-sessions/:id/results`: the CLI's report of what its local
 * receiver answered, recorded as the attempts. Any API instance may take it:
 * the record is keyed by the lease the report carries, not by the process
 * that pushed the delivery. Wakes the streams for what falls due next.
 */
export function addListenSessionResults(router: OperationRouter): void {
  router.add(
    {
      method: "post",
      path: "/v3/listen-sessions/:id/results",
      operationId: "recordListenResults",
      summary: "Report listen deliveries",
      description:
        "Records each delivery's attempt with the local receiver's answer; retries follow the published schedule.",
      tag: "Listen sessions",
      params: listenSessionIdParams,
      body: listenReportsBody,
      responses: { 200: { description: "What was recorded.", schema: listenReportsAnswer } },
    },
    async (c, { params, body }) => {
      const { config, mailer, transport } = c.get("hooklane");
      const database = c.get("database");
      const session = await findListenSession(database, c.get("principal"), params.id);
      const answer = await recordListenReports(
        {
          database,
          logger: c.get("log"),
          mailer,
          breaker: listenBreaker(config.breaker),
          retry: { retrySchedule: config.retrySchedule },
        },
        session.id,
        body.results,
      );
      if (answer.recorded.length > 0) await transport.sendDeliver([]);
      return c.json({ object: "listen-results" as const, ...answer });
    },
  );
}
