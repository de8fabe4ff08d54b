import { waitUntil } from "@vercel/functions";
import { sameSecret } from "../lib/auth/same-secret.ts";
import { config, type Config } from "../lib/config/env.ts";
import { createHooklane } from "../lib/create-hooklane.ts";
import { createVercelLane } from "../lib/create-vercel-lane.ts";
import { SchemaBehindError } from "../lib/db/migrations.ts";
import { createLogger } from "../lib/log/logger.ts";
import { exposeLedgerMetrics } from "../lib/metrics/ledger-metrics.ts";

/** The three Vercel functions' handlers (`api/`). */
export interface VercelRuntime {
  /** The API function. */
  api(request: Request): Promise<Response>;
  /** The webhook-out lane function: Vercel Queues pushes both topics here. */
  lane(request: Request): Promise<Response>;
  /** The sweeper cron; Vercel calls it with `Authorization: Bearer $CRON_SECRET`. */
  sweep(request: Request): Promise<Response>;
}

/**
 * One set of services per function instance, built on its first request and
 * reused while warm. A start that fails (the database waking up, a schema
 * behind the code) is not kept: the request answers 503 — naming the
 * command to run when the schema is behind — and the next request starts
 * again. The API's routes, pages and schemas are imported by the API
 * function alone: the lane's and the cron's instances never load them.
 */
export function createVercelRuntime(loadConfig: () => Config = config): VercelRuntime {
  const services = retryingOnce(async () => {
    const hooklane = await createHooklane(loadConfig());
    // The ledger's gauges on the API's /metrics: any instance reads them alike (its own counters come and go).
    exposeLedgerMetrics(hooklane);
    return { hooklane, lane: createVercelLane(hooklane) };
  });
  const api = retryingOnce(async () => {
    const [{ createApp }, started] = await Promise.all([import("./app.ts"), services()]);
    return createApp(started.hooklane).fetch;
  });
  const serve = async <T>(start: () => Promise<T>, use: (started: T) => Promise<Response> | Response) => {
    let started;
    try {
      started = await start();
    } catch (error) {
      return startFailed(error, loadConfig);
    }
    const response = await use(started);
    // A suspended instance exports nothing: what this request traced leaves before the function is done.
    const { tracing } = (await services()).hooklane;
    if (tracing) waitUntil(tracing.flush().catch(() => {}));
    return response;
  };
  return {
    api: (request) => serve(api, (fetch) => fetch(request)),
    lane: (request) => serve(services, (s) => s.lane.handler(request)),
    async sweep(request) {
      // Refused before anything starts: an anonymous caller cannot make an instance connect.
      let secret;
      try {
        secret = loadConfig().cronSecret;
      } catch (error) {
        return startFailed(error, loadConfig);
      }
      if (!secret || !sameSecret(request.headers.get("authorization") ?? "", `Bearer ${secret}`)) {
        return new Response("unauthorized", { status: 401 });
      }
      return serve(services, async (s) => Response.json(await s.lane.sweep()));
    },
  };
}

/** `build()` once; a failed build is forgotten, so the next call tries again. Calls during a build share it. */
function retryingOnce<T>(build: () => Promise<T>): () => Promise<T> {
  let pending: Promise<T> | undefined;
  return () => {
    if (!pending) {
      const attempt = build();
      pending = attempt;
      attempt.catch(() => {
        if (pending === attempt) pending = undefined;
      });
    }
    return pending;
  };
}

function startFailed(error: unknown, loadConfig: () => Config): Response {
  const behind = error instanceof SchemaBehindError;
  let logger;
  try {
    const settings = loadConfig();
    logger = createLogger({ level: settings.logLevel, format: settings.logFormat });
  } catch {
    logger = createLogger({ level: "error", format: "json" });
  }
  logger.error({ err: error }, "the function could not start; the next request tries again");
  const body = {
    type: "about:blank",
    status: 503,
    title: "Service Unavailable",
    detail: behind ? error.message : "The service could not start (its database or configuration); try again shortly.",
  };
  return new Response(JSON.stringify(body), {
    status: 503,
    headers: { "content-type": "application/problem+json", "retry-after": behind ? "60" : "5" },
  });
}

const runtime = createVercelRuntime();

/** The API function's handler. */
export const handleApiRequest = runtime.api;
/** The webhook-out lane function's handler. */
export const handleLaneRequest = runtime.lane;
/** The sweeper cron's handler. */
export const handleSweepRequest = runtime.sweep;
