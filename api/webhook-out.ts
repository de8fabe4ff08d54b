// The bundle of app/vercel-runtime.ts (npm run build; vercel-build builds it before Vercel traces this file).
import { handleLaneRequest } from "#vercel-runtime";

// The webhook-out lane: its own function, maxDuration and queue triggers (vercel.json).
export const POST = handleLaneRequest;
