import { pgliteFactory } from "../support/harness.ts";
import { describePipeline } from "../support/pipeline-contract.ts";

describePipeline("the embedded database (PGlite)", pgliteFactory, "vercel");
