import { pgliteFactory } from "../support/harness.ts";
import { describeIdempotency } from "../support/idempotency-contract.ts";

describeIdempotency("the embedded database (PGlite)", pgliteFactory);
