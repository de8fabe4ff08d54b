-- hooklane_dispatch_gone: when dispatches are deleted, their open rows and attempts go with them.
--
-- Called by: the trigger webhook_dispatch_gone, once per statement that deletes dispatches (retention, a listen
-- session ended, a webhook's cascade). Neither table has a foreign key to webhook_dispatch: a key's check per
-- row cost every route insert and every attempt recorded a lookup of the dispatch.
--
-- Locks: the open rows and attempts it deletes.
--
-- Steps: by the deleted ids, through webhook_dispatch_open's and webhook_attempt's keys, whatever their number.
CREATE OR REPLACE FUNCTION hooklane_dispatch_gone() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
  DELETE FROM webhook_dispatch_open o WHERE o.dispatch_id = ANY (ARRAY(SELECT g.id FROM gone g));
  DELETE FROM webhook_attempt a WHERE a.dispatch_id = ANY (ARRAY(SELECT g.id FROM gone g));
  RETURN NULL;
END;
$$;

CREATE OR REPLACE TRIGGER webhook_dispatch_gone
AFTER DELETE ON webhook_dispatch
REFERENCING OLD TABLE AS gone
FOR EACH STATEMENT EXECUTE FUNCTION hooklane_dispatch_gone();
