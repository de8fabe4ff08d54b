// The bundle of app/vercel-runtime.ts (npm run build; vercel-build builds it before Vercel traces this file).
import { handleLaneRequest } from "#vercel-runtime";

// The lane's `webhook-out-route` consumer: its own function, maxDuration and queue trigger (vercel.ts).
export const POST = handleLaneRequest;
