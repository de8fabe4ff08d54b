import type { AttemptRecord } from "../../lib/db/sql/record-attempts.ts";

/** A first attempt of `dispatchId` (of `webhookId`) answered 200, as the deliver consumer records it. */
export const succeededAttempt = (dispatchId: string, webhookId: string): AttemptRecord => ({
  dispatchId,
  webhookId,
  attempt: 1,
  status: "success",
  retryInMs: null,
  startedAt: new Date(),
  durationMs: 4,
  outcome: "success",
  statusCode: 200,
  errorClass: null,
  errorMessage: null,
  responseExcerpt: null,
  signature: { timestamp: 1, scheme: "hooklane-v1", signatures: 1 },
  probe: false,
  test: false,
});
