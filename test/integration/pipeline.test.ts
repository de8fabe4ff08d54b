import { postgresFactory } from "../support/postgres.ts";
import { describePipeline } from "../support/pipeline-contract.ts";

describePipeline("PostgreSQL", postgresFactory);
