-- Takes back 0017's generic plans for the claim. A generic plan is made once per session, from the statistics of
-- that moment: a worker that started on an empty table kept a plan for an empty table after 100,000 dispatches
-- arrived, and drained them at 557 /s instead of 2,000–3,000 /s until its plans were invalidated. Planned per call
-- again, the claim costs its planning and follows the table.
ALTER FUNCTION hooklane_in_flight(timestamptz, text, text[]) RESET plan_cache_mode;
--> statement-breakpoint
ALTER FUNCTION hooklane_claim_dispatches(text, integer, integer, text, text, integer, integer, integer, integer, integer, text[], text[])
  RESET plan_cache_mode;
