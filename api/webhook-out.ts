import { handleLaneRequest } from "../app/vercel-runtime.ts";

// The webhook-out lane: its own function, maxDuration and queue triggers (vercel.json).
export const POST = handleLaneRequest;
