-- The seq that the event settling an approval will have once p_events are appended to the
-- organization's chain: the first event whose webhook carries this approval's receipt, counted
-- from the chain head as it stands (in its row, or moved within a group-commit batch, see
-- ag_append_audit_events). NULL when none carries one. The caller has taken the head
-- (ag_take_chain_head), so it cannot move before the append; the settling write records the seq
-- in the same update, instead of updating the row a second time. The events (one or two) are
-- looked at in a loop of plain expressions, which PL/pgSQL evaluates without starting a query.
CREATE OR REPLACE FUNCTION ag_receipt_seq(p_org uuid, p_events jsonb, p_approval uuid)
RETURNS bigint
LANGUAGE plpgsql STABLE
AS $$
DECLARE
  v_position integer;
  v_moved_head text;
BEGIN
  FOR v_index IN 0 .. jsonb_array_length(p_events) - 1 LOOP
    IF jsonb_typeof(p_events->v_index->'webhook'->'data'->'receipt') = 'object'
       AND p_events->v_index->'webhook'->'data'->>'approvalId' = p_approval::text THEN
      v_position := v_index + 1;
      EXIT;
    END IF;
  END LOOP;
  IF v_position IS NULL THEN
    RETURN NULL;
  END IF;
  v_moved_head := current_setting(ag_chain_head_setting(p_org), true);
  IF v_moved_head <> '' THEN
    RETURN split_part(v_moved_head, ':', 1)::bigint + v_position;
  END IF;
  RETURN (SELECT seq FROM audit_chain_heads WHERE org_id = p_org) + v_position;
END
$$;
