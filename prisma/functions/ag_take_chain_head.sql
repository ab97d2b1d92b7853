-- Takes one organization's chain head for a single write (ag_lock_chain_heads), unless this
-- transaction's batch took it already and defers it (ag_defer_chain_heads): a batch's items then
-- do not lock the head again, one by one. Returns whether this call took it (false: the batch holds
-- it). Callers assign the answer rather than PERFORM the call: PL/pgSQL evaluates an assignment
-- as a plain expression, and a PERFORM as a query through the executor, once per item of a batch.
CREATE OR REPLACE FUNCTION ag_take_chain_head(p_org uuid)
RETURNS boolean
LANGUAGE plpgsql
AS $$
BEGIN
  IF ag_chain_head_setting(p_org) IS NULL THEN
    PERFORM ag_lock_chain_heads(ARRAY[p_org]);
    RETURN true;
  END IF;
  RETURN false;
END
$$;
