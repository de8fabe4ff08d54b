-- hooklane_event_owner: the account that owns a resource now, by the catalogue's owner strategy.
--
-- Called by: hooklane_route_events, for a route message published without its owner (the publisher reads the owner
-- in the mutation's transaction and sends it in the message; this is for a message that lacks it).
--
-- Locks: none.
--
-- Steps: `self`, the resource id is the account; `none`, no account; `direct`, the row's column; `via`, the column
-- of the row its reference points at. Table and column names come from the reviewed catalogue, checked against
-- the schema when the catalogue is read, and are quoted as identifiers. A row that is gone has no owner (null).
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
