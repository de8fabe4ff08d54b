// The bundle of app/vercel-runtime.ts (npm run build; vercel-build builds it before Vercel traces this file).
import { handleSweepRequest } from "#vercel-runtime";

// The sweeper, run by the cron in vercel.ts.
export const GET = handleSweepRequest;
