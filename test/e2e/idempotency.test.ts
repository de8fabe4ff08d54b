import { pgliteFactory } from "../support/harness.ts";
import { describeIdempotencyCallers } from "../support/idempotency-callers-contract.ts";
import { describeIdempotency } from "../support/idempotency-contract.ts";

describeIdempotency("the embedded database (PGlite)", pgliteFactory);
describeIdempotencyCallers("the embedded database (PGlite)", pgliteFactory);
