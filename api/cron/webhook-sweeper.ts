import { handleSweepRequest } from "../../app/vercel-runtime.ts";

// The sweeper, run by the cron in vercel.json.
export const GET = handleSweepRequest;
