-- Appends events to an organization's chain and publishes each as a domain event in the outbox,
-- in the caller's transaction. The head row lock serializes appends of one organization and
-- leaves the others alone; seq has no gaps because a rolled-back caller rolls back its head
-- update too. The outbox row points at its audit event (org_id, audit_seq) rather than copying
-- it; events that are also webhooks carry their webhook body, fixed now, byte for byte what every
-- delivery attempt sends.
-- Within a group-commit batch (ag_defer_chain_heads) the head moves in a transaction-local setting
-- instead of its row; a setting made in a subtransaction is undone with it, so a batch's item that
-- fails leaves the head where it was.
-- An event that settles an approval (its webhook carries a receipt) is the one its receipt names:
-- the settling write records its seq on the approval beforehand (ag_receipt_seq).
-- Returns the seq of the last event appended. The events are walked by index, in plain
-- expressions, and the write paths of a batch assign the answer (see ag_take_chain_head), so that
-- an append starts no query of its own besides its two inserts.
CREATE OR REPLACE FUNCTION ag_append_audit_events(p_org uuid, p_events jsonb)
RETURNS bigint
LANGUAGE plpgsql
AS $$
DECLARE
  v_seq bigint;
  v_hash text;
  v_next_hash text;
  v_event jsonb;
  v_created_at timestamptz;
  v_deferred_setting text := ag_chain_head_setting(p_org);
  v_moved_head text := current_setting(v_deferred_setting, true);
BEGIN
  IF v_moved_head <> '' THEN
    v_seq := split_part(v_moved_head, ':', 1)::bigint;
    v_hash := split_part(v_moved_head, ':', 2);
  ELSE
    SELECT seq, hash INTO v_seq, v_hash FROM audit_chain_heads WHERE org_id = p_org FOR UPDATE;
    IF NOT FOUND THEN
      RAISE EXCEPTION 'organization % has no audit chain head', p_org;
    END IF;
  END IF;

  FOR v_index IN 0 .. coalesce(jsonb_array_length(p_events), 0) - 1 LOOP
    v_event := p_events->v_index;
    v_seq := v_seq + 1;
    v_created_at := (v_event->>'createdAt')::timestamptz;
    v_next_hash := ag_audit_hash(v_hash, ag_audit_canonical(
      v_seq, v_event->>'type', v_event->>'actor', v_event->>'data', v_created_at));

    INSERT INTO audit_events (org_id, seq, type, actor, data, action, agent, created_at, prev_hash, hash)
    VALUES (p_org, v_seq, v_event->>'type', v_event->>'actor', v_event->>'data',
            v_event->>'action', v_event->>'agent', v_created_at, v_hash, v_next_hash);

    INSERT INTO outbox_messages (org_id, event_id, event_type, audit_seq, body)
    VALUES (p_org, (v_event->>'id')::uuid, v_event->>'type', v_seq, v_event->'webhook');

    v_hash := v_next_hash;
  END LOOP;

  IF v_deferred_setting IS NOT NULL THEN
    v_moved_head := set_config(v_deferred_setting, v_seq || ':' || v_hash, true);
  ELSE
    UPDATE audit_chain_heads SET seq = v_seq, hash = v_hash WHERE org_id = p_org;
  END IF;
  RETURN v_seq;
END
$$;
