-- Writes many creations ('create'), votes ('vote') or timeouts ('timeout') in one statement and one
-- commit: the group commit of src/lib/group-commit.ts. Each element of p_items holds the
-- organization (`orgId`) and the arguments of its write by name (see ag_write_batch_item). The
-- organizations' chain heads are taken once, for the whole batch, in org order, and written once
-- (ag_defer_chain_heads).
-- The items first run together in one subtransaction. Only when one of them fails is that undone
-- and each run again in a subtransaction of its own, so one that fails leaves the others in: its
-- outcome is 'quota_exceeded' (SQLSTATE AG402), 'not_pending' (AG409: a deadline passed mid-vote)
-- or 'failed: <SQLSTATE> <message>'; the others are their write's, in order. A subtransaction per
-- item on every batch was a large share of its cost, and a batch of more than 64 that write overflows
-- each backend's cache of subtransaction ids, which makes every concurrent snapshot check slower.
CREATE OR REPLACE FUNCTION ag_write_batch(p_kind text, p_items jsonb)
RETURNS text[]
LANGUAGE plpgsql
AS $$
DECLARE
  v_item jsonb;
  v_outcomes text[] := '{}';
  v_outcome text;
  v_orgs uuid[];
BEGIN
  v_orgs := ARRAY(SELECT DISTINCT (value->>'orgId')::uuid FROM jsonb_array_elements(p_items));
  PERFORM ag_lock_chain_heads(v_orgs);
  PERFORM ag_defer_chain_heads(v_orgs);
  BEGIN
    FOR v_item IN SELECT value FROM jsonb_array_elements(p_items) LOOP
      v_outcomes := v_outcomes || ag_write_batch_item(p_kind, v_item);
    END LOOP;
  EXCEPTION WHEN OTHERS THEN
    v_outcomes := '{}';
    FOR v_item IN SELECT value FROM jsonb_array_elements(p_items) LOOP
      BEGIN
        v_outcome := ag_write_batch_item(p_kind, v_item);
      EXCEPTION
        WHEN SQLSTATE 'AG402' THEN v_outcome := 'quota_exceeded';
        WHEN SQLSTATE 'AG409' THEN v_outcome := 'not_pending';
        WHEN OTHERS THEN v_outcome := 'failed: ' || SQLSTATE || ' ' || SQLERRM;
      END;
      v_outcomes := v_outcomes || v_outcome;
    END LOOP;
  END;
  PERFORM ag_write_chain_heads();
  RETURN v_outcomes;
END
$$;
