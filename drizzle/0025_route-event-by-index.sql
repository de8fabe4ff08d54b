-- Routing finds an event's webhooks through an index, whatever the webhook table's statistics say.
--
-- hooklane_route_event's insert selects the webhooks subscribed to the event's type (events @> type, or '*') that
-- belong to its owner. PL/pgSQL keeps the plan it settles on for the session, and a worker that started while there
-- were a handful of webhooks kept a sequential scan of the table: after 5,000 more webhooks arrived (another
-- account's, another type), routing one event read all 5,009 rows (test/integration/route-plan.test.ts), and would
-- for every event until an ANALYZE invalidated the plan. With sequential scans off the lookup goes through the
-- events index (or the account's), however many webhooks there are.
ALTER FUNCTION hooklane_route_event(jsonb, jsonb) SET enable_seqscan = off;
