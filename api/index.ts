import { handleApiRequest } from "../app/vercel-runtime.ts";

// The API function: every path but the lane and the cron is rewritten here (vercel.json).
export const GET = handleApiRequest;
export const POST = handleApiRequest;
export const PUT = handleApiRequest;
export const PATCH = handleApiRequest;
export const DELETE = handleApiRequest;
export const OPTIONS = handleApiRequest;
export const HEAD = handleApiRequest;
