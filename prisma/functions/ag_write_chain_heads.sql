-- Ends ag_defer_chain_heads: writes each deferred organization's moved head to its row, once.
CREATE OR REPLACE FUNCTION ag_write_chain_heads()
RETURNS void
LANGUAGE plpgsql
AS $$
DECLARE
  v_org uuid;
  v_setting text;
  v_moved_head text;
BEGIN
  FOREACH v_org IN ARRAY string_to_array(NULLIF(current_setting('ag.deferred_heads', true), ''), ',')::uuid[] LOOP
    v_setting := ag_chain_head_setting(v_org);
    v_moved_head := current_setting(v_setting, true);
    IF v_moved_head <> '' THEN
      UPDATE audit_chain_heads
      SET seq = split_part(v_moved_head, ':', 1)::bigint, hash = split_part(v_moved_head, ':', 2)
      WHERE org_id = v_org;
      PERFORM set_config(v_setting, '', true);
    END IF;
  END LOOP;
  PERFORM set_config('ag.deferred_heads', '', true);
END
$$;
