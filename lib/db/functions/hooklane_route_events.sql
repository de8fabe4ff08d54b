-- hooklane_route_events: routes a batch of events, each to every webhook that hears it, in one insert.
--
-- Called by: hooklane_route_and_claim (the postgres lane's step) and insertDispatches
-- (lib/db/sql/insert-dispatches.ts: the route consumer, one event at a time, on every transport).
--
-- Locks: the webhook_sequence rows of the webhooks it routes to (upserted in id order, held to the end of the
-- transaction: routings of one webhook number one after the other); the inserts' unique keys (event_id, webhook_id)
-- and (webhook_id, sequence), and their foreign key to the webhook.
--
-- Steps:
--   1. Each message's owner: the account the publisher read in the mutation's transaction (`account`), or for a
--      message without one, the owner of its resource now (hooklane_event_owner). Its thin body, built here as
--      JSON.stringify builds it (buildEventBody's bytes, which a test holds it to), in two halves around `sequence`.
--   2. Each event's webhooks: global ones always, an account's only for its own events; paused and disabled
--      ones too (their events are kept); none for a type that is deprecated or was never synced; a webhook with a
--      filter only when the event's attributes (`attributes` of the message, read at publish) match its
--      `filter_path` (a message without attributes matches as one whose attributes are all absent). An event
--      named twice in the batch counts once per webhook, for its first message.
--   3. The pairs with no dispatch yet: a redelivered message inserts nothing and takes no number.
--   4. Each webhook's next numbers, taken from its webhook_sequence row by one upsert whose RETURNING holds the
--      value after any routing that committed while this one waited for the row (each pair finds its webhook's by
--      the webhook's rank in id order): the pairs are numbered per
--      webhook in batch order up to it, never twice and never skipping one. Only when the same event is routed
--      twice at the same moment does the later insert meet the earlier one's key: it fails, numbers and all, and
--      its message is routed again later, finding the dispatch made.
--   5. One pending dispatch per pair, its number in its body, the event's attributes and trace (`traceparent`, with
--      tracing on), and its open row, due now; for a webhook with
--      `resource` ordering the open row also carries the resource (`<object>:<id>`) and the sequence, which the
--      claim orders by (hooklane_held_in_order). Each dispatch is written once, in the state it is delivered from.
--   6. A listen session that got one is told on channel hooklane_listen (payload: its webhook id, once per
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
  -- 1, 2. The batch's pairs.
  WITH e AS MATERIALIZED (
    SELECT x.ord, x.message ->> 'eventId' AS event_id, x.message ->> 'type' AS type, x.account,
      x.message -> 'attributes' AS attributes, x.message ->> 'traceparent' AS traceparent,
      (x.rule ->> 'object') || ':' || (x.message ->> 'resourceId') AS resource_key,
      -- JSON.stringify's bytes: keys in this order, no spaces; to_json escapes text as it does.
      '{"id":' || to_json(x.message ->> 'eventId')::text
        || ',"object":"event"'
        || ',"type":' || to_json(x.message ->> 'type')::text
        || ',"created":' || to_json(x.message ->> 'occurredAt')::text
        || ',"livemode":' || (x.message -> 'livemode')::text AS head,
      ',"data":{"object":' || to_json(x.rule ->> 'object')::text
        || ',"id":' || to_json(x.message ->> 'resourceId')::text
        || ',"account":' || coalesce(to_json(x.account)::text, 'null') || '}}' AS tail
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
    SELECT DISTINCT ON (e.event_id, w.id) e.ord, w.id AS webhook_id, e.event_id, e.type, e.account, e.head, e.tail,
      e.attributes, e.traceparent,
      w.status = 'listening' AS listening, CASE WHEN w.ordering = 'resource' THEN e.resource_key END AS order_key
    FROM e JOIN webhook w
      ON (w.events @> ARRAY[e.type]::text[] OR w.events @> ARRAY['*']::text[])
      AND (w.account IS NULL OR w.account = e.account)
    WHERE w.deleted_at IS NULL
      AND (w.filter_path IS NULL OR coalesce(coalesce(e.attributes, '{}') @@ w.filter_path, false))
      AND EXISTS (SELECT 1 FROM webhook_event_type t WHERE t.internal = e.type AND NOT t.deprecated)
    ORDER BY e.event_id, w.id, e.ord
  ),
  -- 3. The pairs with no dispatch yet.
  fresh AS MATERIALIZED (
    SELECT p.* FROM pairs p
    -- On the unique key (event_id, webhook_id), by the event: the webhook's column is kept out of the index choice,
    -- or a generic plan may walk the webhook's whole log instead.
    WHERE NOT EXISTS (
      SELECT 1 FROM webhook_dispatch d WHERE d.event_id = p.event_id AND (d.webhook_id || '') = p.webhook_id)
  ),
  -- 4. Each webhook's numbers, its row locked (in id order) until this transaction ends.
  bumped AS (
    INSERT INTO webhook_sequence AS s (webhook_id, last)
    SELECT f.webhook_id, count(*) FROM fresh f GROUP BY f.webhook_id ORDER BY f.webhook_id
    ON CONFLICT (webhook_id) DO UPDATE SET last = s.last + excluded.last
    RETURNING s.webhook_id, s.last
  ),
  -- Each pair's dispatch id made here, as the column's default makes it, so that both inserts and the answer read
  -- the pairs themselves (no join of the new rows back to them). Its webhook's number is found by position, not by a
  -- join: the upsert returned one row per webhook of the pairs, so in id order the webhook's rank among the pairs' is
  -- its place among the numbers, read once. (A join of the pairs to the upsert's rows can only be a nested loop here,
  -- both estimated at one row: for one event to 10,000 webhooks, 10^8 comparisons and seconds.)
  numbered AS MATERIALIZED (
    SELECT f.*, 'wd_' || replace(gen_random_uuid()::text, '-', '') AS id,
      (SELECT array_agg(b.last ORDER BY b.webhook_id) FROM bumped b)[dense_rank() OVER (ORDER BY f.webhook_id)]
        - count(*) OVER (PARTITION BY f.webhook_id)
        + row_number() OVER (PARTITION BY f.webhook_id ORDER BY f.ord) AS sequence
    FROM fresh f
  ),
  -- 5. The dispatches and their open rows.
  inserted AS (
    INSERT INTO webhook_dispatch (
      id, event_id, event_type, webhook_id, account, sequence, payload, attributes, traceparent, next_attempt_at)
    SELECT n.id, n.event_id, n.type, n.webhook_id, n.account, n.sequence,
      n.head || ',"sequence":' || n.sequence || n.tail, nullif(n.attributes, 'null'), n.traceparent, now()
    FROM numbered n
    ORDER BY n.ord, n.webhook_id
  ),
  opened AS (
    INSERT INTO webhook_dispatch_open (dispatch_id, webhook_id, next_attempt_at, order_key, sequence)
    SELECT n.id, n.webhook_id, now(), n.order_key, CASE WHEN n.order_key IS NOT NULL THEN n.sequence END
    FROM numbered n
  ),
  woken AS (
    SELECT pg_notify('hooklane_listen', l.webhook_id)
    FROM (SELECT DISTINCT n.webhook_id FROM numbered n WHERE n.listening) l
  ),
  owned AS (SELECT n.id, n.ord FROM numbered n)
  SELECT
    (SELECT coalesce(array_agg(o.id ORDER BY o.ord, o.id), '{}'::text[]) FROM owned o),
    (SELECT array_agg(coalesce(c.n, 0)::integer ORDER BY m.ord)
       FROM generate_series(1, cardinality(p_messages)) AS m(ord)
       LEFT JOIN (SELECT o.ord, count(*) AS n FROM owned o GROUP BY o.ord) c ON c.ord = m.ord),
    (SELECT count(*) FROM woken)
  INTO ids, routed, v_woken;
END;
$$;
