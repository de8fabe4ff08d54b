-- Custom SQL migration file, put your code below! --
--> statement-breakpoint
-- hooklane_route_events: routes a batch of events, each to every webhook that hears it, in one insert.
--
-- Called by: hooklane_route_and_claim (the postgres lane's step) and insertDispatches
-- (lib/db/sql/insert-dispatches.ts: the route consumer, one event at a time, on every transport).
--
-- Locks: none of its own; the inserts' unique key (event_id, webhook_id) and their foreign key to the webhook.
--
-- Steps:
--   1. Each message's owner: the account the publisher read in the mutation's transaction (`account`), or for a
--      message without one, the owner of its resource now (hooklane_event_owner). Its thin body, built here as
--      JSON.stringify builds it (buildEventBody's bytes, which a test holds it to).
--   2. Each event's webhooks: global ones always, an account's only for its own events; paused and disabled
--      ones too (their events are kept); none for a type that is deprecated or was never synced.
--   3. One pending dispatch per event x webhook (a redelivered message inserts nothing: unique key) and its open
--      row, due now. Each dispatch is written once, in the state it is delivered from.
--   4. A listen session that got one is told on channel hooklane_listen (payload: its webhook id, once per
--      transaction), so only that session's streams wake (lib/db/sql/listen-wake.ts).
-- Returns the new dispatches' ids (in the batch's order) and, per message, how many it created.
CREATE OR REPLACE FUNCTION hooklane_route_events(
  p_messages jsonb[], p_rules jsonb[], OUT ids text[], OUT routed integer[]
)
LANGUAGE plpgsql
SET enable_seqscan = off
SET jit = off
SET enable_hashjoin = off
SET enable_mergejoin = off
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
  v_woken integer;
BEGIN
  WITH e AS MATERIALIZED (
    SELECT x.ord, x.message ->> 'eventId' AS event_id, x.message ->> 'type' AS type, x.account,
      -- JSON.stringify's bytes: keys in this order, no spaces; to_json escapes text as it does.
      '{"id":' || to_json(x.message ->> 'eventId')::text
        || ',"type":' || to_json(x.message ->> 'type')::text
        || ',"created":' || to_json(x.message ->> 'occurredAt')::text
        || ',"livemode":' || (x.message -> 'livemode')::text
        || ',"data":{"object":' || to_json(x.rule ->> 'object')::text
        || ',"id":' || to_json(x.message ->> 'resourceId')::text
        || ',"account":' || coalesce(to_json(x.account)::text, 'null') || '}}' AS payload
    FROM (
      SELECT m.ord, m.message, m.rule,
        CASE jsonb_typeof(m.message -> 'account')
          WHEN 'string' THEN m.message ->> 'account'
          WHEN 'null' THEN NULL
          ELSE hooklane_event_owner(m.rule -> 'owner', m.message ->> 'resourceId') END AS account
      FROM unnest(p_messages, p_rules) WITH ORDINALITY AS m(message, rule, ord)
      -- Kept apart, so the owner is looked up once per message rather than once for the account and again for the body.
      OFFSET 0
    ) x
  ),
  -- Each event's webhooks, found through their indexes before anything else is computed over them.
  pairs AS MATERIALIZED (
    SELECT e.ord, w.id AS webhook_id, e.event_id, e.type, e.account, e.payload, w.status = 'listening' AS listening
    FROM e JOIN webhook w
      ON (w.events @> ARRAY[e.type]::text[] OR w.events @> ARRAY['*']::text[])
      AND (w.account IS NULL OR w.account = e.account)
    WHERE w.deleted_at IS NULL
      AND EXISTS (SELECT 1 FROM webhook_event_type t WHERE t.internal = e.type AND NOT t.deprecated)
  ),
  inserted AS (
    INSERT INTO webhook_dispatch (event_id, event_type, webhook_id, account, payload)
    SELECT p.event_id, p.type, p.webhook_id, p.account, p.payload FROM pairs p
    ORDER BY p.ord, p.webhook_id
    ON CONFLICT (event_id, webhook_id) DO NOTHING
    RETURNING id, event_id, webhook_id, payload, next_attempt_at
  ),
  opened AS (
    INSERT INTO webhook_dispatch_open (dispatch_id, webhook_id, next_attempt_at)
    SELECT i.id, i.webhook_id, i.next_attempt_at FROM inserted i
  ),
  woken AS (
    SELECT pg_notify('hooklane_listen', l.webhook_id)
    FROM (
      SELECT DISTINCT p.webhook_id FROM pairs p
      WHERE p.listening AND EXISTS (SELECT 1 FROM inserted i WHERE i.webhook_id = p.webhook_id)
    ) l
  ),
  -- Each new dispatch counts for the batch's first message that would have made it: the first of its event with its
  -- body (the account is in the body), as when the messages were routed one after the other.
  owned AS (
    SELECT i.id, (SELECT min(e.ord) FROM e WHERE e.event_id = i.event_id AND e.payload = i.payload) AS ord
    FROM inserted i
  )
  SELECT
    (SELECT coalesce(array_agg(o.id ORDER BY o.ord, o.id), '{}'::text[]) FROM owned o),
    (SELECT array_agg(coalesce(c.n, 0)::integer ORDER BY m.ord)
       FROM generate_series(1, cardinality(p_messages)) AS m(ord)
       LEFT JOIN (SELECT o.ord, count(*) AS n FROM owned o GROUP BY o.ord) c ON c.ord = m.ord),
    (SELECT count(*) FROM woken)
  INTO ids, routed, v_woken;
END;
$$;
