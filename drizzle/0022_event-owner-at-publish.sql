-- The account that owns an event's resource is read when the event is published, by the statement that writes
-- the route message inside the mutation's transaction, and travels in the message as `account` (a string, or null
-- for no owner). Read at route time instead, a resource deleted between its event's commit and its routing had no
-- owner any more: the owner's webhooks missed the event. hooklane_route_event uses the message's `account` when it
-- is a string or null, and looks the owner up with hooklane_event_owner (the catalogue's owner strategy, as 0015
-- did inline) only for a message without one: written before this migration, or replayed as it was.
CREATE OR REPLACE FUNCTION hooklane_event_owner(p_owner jsonb, p_resource text) RETURNS text
LANGUAGE plpgsql
STABLE
AS $$
DECLARE
  v_account text;
BEGIN
  CASE p_owner ->> 'kind'
    WHEN 'self' THEN v_account := p_resource;
    WHEN 'none' THEN v_account := NULL;
    WHEN 'direct' THEN
      EXECUTE format('SELECT %I::text FROM %I WHERE id = $1', p_owner ->> 'column', p_owner ->> 'table')
        INTO v_account USING p_resource;
    WHEN 'via' THEN
      EXECUTE format('SELECT p.%I::text FROM %I t JOIN %I p ON p.id = t.%I WHERE t.id = $1',
        p_owner ->> 'column', p_owner ->> 'table', p_owner ->> 'parentTable', p_owner ->> 'reference')
        INTO v_account USING p_resource;
    ELSE
      RAISE EXCEPTION 'unknown owner strategy %', p_owner ->> 'kind';
  END CASE;
  RETURN v_account;
END;
$$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION hooklane_route_event(p_message jsonb, p_rule jsonb) RETURNS text[]
LANGUAGE plpgsql
AS $$
DECLARE
  v_type text := p_message ->> 'type';
  v_resource text := p_message ->> 'resourceId';
  v_account text;
  v_payload text;
  v_ids text[];
BEGIN
  -- The owner the publisher read in the mutation's transaction; looked up now only for a message without one.
  v_account := CASE jsonb_typeof(p_message -> 'account')
    WHEN 'string' THEN p_message ->> 'account'
    WHEN 'null' THEN NULL
    ELSE hooklane_event_owner(p_rule -> 'owner', v_resource) END;

  -- JSON.stringify's bytes: keys in this order, no spaces; to_json escapes text as it does.
  v_payload := '{"id":' || to_json(p_message ->> 'eventId')::text
    || ',"type":' || to_json(v_type)::text
    || ',"created":' || to_json(p_message ->> 'occurredAt')::text
    || ',"livemode":' || (p_message -> 'livemode')::text
    || ',"data":{"object":' || to_json(p_rule ->> 'object')::text
    || ',"id":' || to_json(v_resource)::text
    || ',"account":' || coalesce(to_json(v_account)::text, 'null') || '}}';

  WITH inserted AS (
    INSERT INTO webhook_dispatch (event_id, event_type, webhook_id, account, payload)
    SELECT p_message ->> 'eventId', v_type, w.id, v_account, v_payload
    FROM webhook w
    WHERE (w.events @> ARRAY[v_type]::text[] OR w.events @> ARRAY['*']::text[])
      AND (w.account IS NULL OR w.account = v_account)
      AND w.deleted_at IS NULL
      AND EXISTS (SELECT 1 FROM webhook_event_type t WHERE t.internal = v_type AND NOT t.deprecated)
    ON CONFLICT (event_id, webhook_id) DO NOTHING
    RETURNING id
  )
  SELECT coalesce(array_agg(id), '{}'::text[]) INTO v_ids FROM inserted;
  RETURN v_ids;
END;
$$;
