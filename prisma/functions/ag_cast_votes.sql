-- Casts many votes in one statement and one commit: the group commit of decisions. Each element
-- holds ag_cast_vote's arguments by name ({ orgId, id, voter, channel, vote, recordedEvents,
-- settlement, settledEvents }); the organizations' chain heads are taken once, in org order, and
-- written once (ag_defer_chain_heads); then the votes run together in one subtransaction and,
-- only when one of them fails, again each in a subtransaction of its own, so one that fails leaves
-- the others in (see ag_create_approvals for why not always one each). Outcomes
-- in order: ag_cast_vote's, 'not_pending' for a deadline passed mid-vote (SQLSTATE AG409), or
-- 'failed: <SQLSTATE> <message>'.
CREATE OR REPLACE FUNCTION ag_cast_votes(p_items jsonb)
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
      v_outcomes := v_outcomes || ag_cast_vote((v_item->>'orgId')::uuid, (v_item->>'id')::uuid, v_item->'voter', v_item->>'channel',
                                               v_item->'vote', v_item->'recordedEvents', v_item->'settlement', v_item->'settledEvents');
    END LOOP;
  EXCEPTION WHEN OTHERS THEN
    v_outcomes := '{}';
    FOR v_item IN SELECT value FROM jsonb_array_elements(p_items) LOOP
      BEGIN
        v_outcome := ag_cast_vote((v_item->>'orgId')::uuid, (v_item->>'id')::uuid, v_item->'voter', v_item->>'channel', v_item->'vote',
                                  v_item->'recordedEvents', v_item->'settlement', v_item->'settledEvents');
      EXCEPTION
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
