// The bundle of app/vercel-runtime.ts (npm run build; vercel-build builds it before Vercel traces this file).
import { handleApiRequest } from "#vercel-runtime";

// The API function: every path but the lane and the cron is rewritten here (vercel.ts).
export const GET = handleApiRequest;
export const POST = handleApiRequest;
export const PUT = handleApiRequest;
export const PATCH = handleApiRequest;
export const DELETE = handleApiRequest;
export const OPTIONS = handleApiRequest;
export const HEAD = handleApiRequest;
