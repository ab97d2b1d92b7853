-- Settles a pending approval with its audit events: a terminal state, or 'changes_requested',
-- which keeps its deadline (p_changes.expiresAt) and may carry a suggested payload. Returns false,
-- changing nothing, when the approval is not on the required side of its deadline, or not in a
-- state that side may settle: a decision needs 'before' (expires_at still ahead) and a pending
-- approval; a timeout needs 'reached', and expires a request waiting for changes as it does a
-- pending one. The two conditions exclude each other, so a decision racing the expiry has exactly
-- one winner, and the conditional update decides races between deciders. The chain head is taken
-- first, as on every write path (ag_take_chain_head).
CREATE OR REPLACE FUNCTION ag_settle_approval(p_org uuid, p_id uuid, p_changes jsonb, p_events jsonb, p_deadline text)
RETURNS boolean
LANGUAGE plpgsql
AS $$
DECLARE
  v_took_head boolean;
  v_last_seq bigint;
BEGIN
  IF p_deadline NOT IN ('before', 'reached') THEN
    RAISE EXCEPTION 'p_deadline must be before or reached, not %', p_deadline;
  END IF;
  v_took_head := ag_take_chain_head(p_org);

  UPDATE approvals SET
    status       = (p_changes->>'status')::"ApprovalStatus",
    verdict      = p_changes->>'verdict',
    feedback     = p_changes->>'feedback',
    payload      = COALESCE(p_changes->'payload', payload),
    payload_hash = COALESCE(p_changes->>'payloadHash', payload_hash),
    decided_at   = (p_changes->>'decidedAt')::timestamptz,
    decided_by   = NULLIF(p_changes->'decidedBy', 'null'::jsonb),
    escalated_to = (p_changes->>'escalatedTo')::uuid,
    expires_at   = (p_changes->>'expiresAt')::timestamptz,
    suggested_payload = NULLIF(p_changes->'suggestedPayload', 'null'::jsonb),
    receipt_seq  = COALESCE(ag_receipt_seq(p_org, p_events, p_id), receipt_seq)
  -- By primary key, as in ag_cast_vote: the organization by IS NOT DISTINCT FROM, which no index serves.
  WHERE id = p_id AND org_id IS NOT DISTINCT FROM p_org
    AND CASE p_deadline
          WHEN 'before' THEN status = 'pending' AND expires_at > clock_timestamp()
          ELSE status IN ('pending', 'changes_requested') AND expires_at <= clock_timestamp()
        END;

  IF NOT FOUND THEN
    RETURN false;
  END IF;

  v_last_seq := ag_append_audit_events(p_org, p_events);
  RETURN true;
END
$$;
