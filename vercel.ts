// The project's configuration on Vercel, computed when a deployment is built (in place of a static vercel.json): the
// lane's concurrency comes from the build's environment (WEBHOOK_ROUTE_MAX_CONCURRENCY,
// WEBHOOK_DELIVER_MAX_CONCURRENCY). `npm run vercel:check` builds it offline and checks the output.
import { vercelProjectConfig } from "./lib/webhook/transport/vercel/vercel-project.ts";

export const config = vercelProjectConfig(process.env);
