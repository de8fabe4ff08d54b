import { streamSSE } from "hono/streaming";
import type { OperationRouter } from "../../../lib/api/operation.ts";
import { QuotaExceededError } from "../../../lib/api/problem.ts";
import { findListenSession } from "../../../lib/webhook/listen/listen-session.ts";
import { listenStreamDeps, serveListenStream } from "../../../lib/webhook/listen/listen-stream.ts";
import { listenSessionIdParams, presentListenSession } from "./listen-session-schemas.ts";

/**
 * `GET /v3/listen-sessions/:id/stream`: the connection the CLI holds open.
 * Server-sent events: `ready` (the session), then `delivery` for each
 * attempt (see ListenDelivery), `ping` while idle, and `end` when the
 * session is over. Whichever process serves the stream claims the session's
 * deliveries for it, so any number of lane workers and API instances work.
 * Each process serves at most `WEBHOOK_QUOTA_LISTEN_STREAMS` open streams
 * per account (429 with `Retry-After` beyond): every one holds a database
 * LISTEN subscription and looks for work at least every `LISTEN.maxIdleMs`.
 */
export function addListenSessionStream(router: OperationRouter): void {
  const openStreams = new Map<string, number>();
  router.add(
    {
      method: "get",
      path: "/v3/listen-sessions/:id/stream",
      operationId: "streamListenSession",
      summary: "Receive a listen session's deliveries",
      description:
        "Server-sent events: `ready`, then one `delivery` per attempt (the body and the signed headers of each POST to make), `ping`, and `end` when the session is over. Renews the session while open.",
      tag: "Listen sessions",
      params: listenSessionIdParams,
      responses: {
        200: {
          description: "The event stream.",
          mediaType: "text/event-stream",
          example: [
            'event: ready\ndata: {"id":"wh_3e8a1f0c9b2d4e7f8a6c5b4d3e2f1a0b","object":"listen-session",…}\n',
            'event: delivery\ndata: {"dispatch":"wd_0eb182b450ec4854a68dfddfc2a71776","lease":"listen/wh_3e8a1f0c9b2d4e7f8a6c5b4d3e2f1a0b/5f1c2a9e","attempt":1,"event":{"id":"evt_…","type":"payment-debt.created"},"payload":"{…}","requests":[{…}],"signature":{…}}\n',
            "event: ping\ndata: \n",
            "event: end\ndata: the session is over\n",
          ].join("\n"),
        },
      },
    },
    async (c, { params }) => {
      const { config } = c.get("hooklane");
      const database = c.get("database");
      const session = await findListenSession(database, c.get("principal"), params.id);
      // Counted by the session's account: an admin streaming another account's session uses that account's share.
      const account = session.account ?? "";
      const open = openStreams.get(account) ?? 0;
      const limit = config.quotas.listenStreams;
      if (open >= limit) {
        throw new QuotaExceededError(
          "listen-streams",
          limit,
          `This account has ${limit} listen streams open, its quota (WEBHOOK_QUOTA_LISTEN_STREAMS); close one first.`,
          5,
        );
      }
      openStreams.set(account, open + 1);
      return streamSSE(c, async (stream) => {
        const closed = new AbortController();
        stream.onAbort(() => closed.abort());
        try {
          await stream.writeSSE({ event: "ready", data: JSON.stringify(presentListenSession(session)) });
          const ended = await serveListenStream(
            listenStreamDeps(c.get("hooklane"), database, c.get("log")),
            session.id,
            {
              delivery: (delivery) => stream.writeSSE({ event: "delivery", data: JSON.stringify(delivery) }),
              ping: () => stream.writeSSE({ event: "ping", data: "" }),
            },
            closed.signal,
          );
          if (ended === "over") await stream.writeSSE({ event: "end", data: "the session is over" });
        } catch (error) {
          // The stream closes and the CLI reconnects; nothing of the error goes to it.
          if (!database.outage.report(error)) c.get("log").error({ err: error }, "listen stream failed");
        } finally {
          const left = (openStreams.get(account) ?? 1) - 1;
          if (left > 0) openStreams.set(account, left);
          else openStreams.delete(account);
        }
      });
    },
  );
}
