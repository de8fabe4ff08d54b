import { config } from "../lib/config/env.ts";
import { createHooklane, createVercelLane } from "../lib/create-hooklane.ts";
import type { Hooklane } from "../lib/hooklane.ts";
import { exposeLedgerMetrics } from "../lib/metrics/ledger-metrics.ts";
import { createApp } from "./app.ts";

// One set of services per function instance, built on its first request and reused while warm.
let services: Promise<Hooklane> | undefined;
const hooklane = () => (services ??= createHooklane(config()));

let api: Promise<(request: Request) => Response | Promise<Response>> | undefined;
/** The API function's handler. */
export const handleApiRequest = async (request: Request): Promise<Response> => (await (api ??= apiHandler()))(request);

/** The app, with the ledger's gauges on its `/metrics`: any instance reads them alike (its own counters come and go). */
async function apiHandler(): Promise<(request: Request) => Response | Promise<Response>> {
  const services = await hooklane();
  exposeLedgerMetrics(services);
  return createApp(services).fetch;
}

let lane: Promise<ReturnType<typeof createVercelLane>> | undefined;
const vercelLane = () => (lane ??= hooklane().then((h) => createVercelLane(h)));

/** The webhook-out lane function's handler: Vercel Queues pushes both topics here. */
export const handleLaneRequest = async (request: Request): Promise<Response> => (await vercelLane()).handler(request);

/**
 * The sweeper cron: re-sends fallback route messages and stranded dispatches.
 * Vercel calls it with `Authorization: Bearer $CRON_SECRET`.
 */
export async function handleSweepRequest(request: Request): Promise<Response> {
  const secret = config().cronSecret;
  if (!secret || request.headers.get("authorization") !== `Bearer ${secret}`) {
    return new Response("unauthorized", { status: 401 });
  }
  return Response.json(await (await vercelLane()).sweep());
}
