-- Creates many approvals in one statement and one commit: the group commit of approval creation
-- (see GroupCommit in src/lib/group-commit.ts). Each element holds ag_create_approval's arguments
-- by name ({ approval, events, monthlyLimit, month, policyRevision }). The organizations' chain
-- heads are taken once, for the whole batch, in org order, and written once (ag_defer_chain_heads).
-- The creations first run together in one subtransaction. Only when one of them fails is that
-- undone and each run again in a subtransaction of its own, so one that fails leaves the others
-- in: its outcome is 'quota_exceeded' (SQLSTATE AG402) or 'failed: <SQLSTATE> <message>'; the
-- others are ag_create_approval's, in order. A subtransaction per item on every batch cost a
-- fifth of the batch, and a batch of more than 64 that write overflows each backend's cache of
-- subtransaction ids, which makes every concurrent snapshot check slower.
CREATE OR REPLACE FUNCTION ag_create_approvals(p_items jsonb)
RETURNS text[]
LANGUAGE plpgsql
AS $$
DECLARE
  v_item jsonb;
  v_outcomes text[] := '{}';
  v_outcome text;
  v_orgs uuid[];
BEGIN
  v_orgs := ARRAY(SELECT DISTINCT (value->'approval'->>'org_id')::uuid FROM jsonb_array_elements(p_items));
  PERFORM ag_lock_chain_heads(v_orgs);
  PERFORM ag_defer_chain_heads(v_orgs);
  BEGIN
    FOR v_item IN SELECT value FROM jsonb_array_elements(p_items) LOOP
      v_outcomes := v_outcomes || ag_create_approval(v_item->'approval', v_item->'events', (v_item->>'monthlyLimit')::integer,
                                                     v_item->>'month', (v_item->>'policyRevision')::uuid);
    END LOOP;
  EXCEPTION WHEN OTHERS THEN
    v_outcomes := '{}';
    FOR v_item IN SELECT value FROM jsonb_array_elements(p_items) LOOP
      BEGIN
        v_outcome := ag_create_approval(v_item->'approval', v_item->'events', (v_item->>'monthlyLimit')::integer, v_item->>'month',
                                        (v_item->>'policyRevision')::uuid);
      EXCEPTION
        WHEN SQLSTATE 'AG402' THEN v_outcome := 'quota_exceeded';
        WHEN OTHERS THEN v_outcome := 'failed: ' || SQLSTATE || ' ' || SQLERRM;
      END;
      v_outcomes := v_outcomes || v_outcome;
    END LOOP;
  END;
  PERFORM ag_write_chain_heads();
  RETURN v_outcomes;
END
$$;
