-- ag_decision_refusal for a voter already resolved to the principal it stands for (ag_principal_of):
-- a vote resolves its voter once, for this and for the key its vote is counted under (ag_cast_vote).
-- PL/pgSQL so that its plan is kept for the session, and the requester is resolved once, only when
-- it matters: as a SQL function, its subquery was pulled up and ag_principal_of ran again at every
-- mention of the requester. The question that reads members (is the voter someone's delegate?) is
-- a condition of its own, asked only of a member the approval does not name: PL/pgSQL evaluates an
-- expression with no query in it directly, and one with a query through the executor, whichever
-- branch of it decides.
--   p_voter: {"type":"api_key","id"}, {"type":"user","id","email","role"} or {"type":"unattributed","id"}
CREATE OR REPLACE FUNCTION ag_principal_refusal(p_approval approvals, p_voter jsonb, p_channel text)
RETURNS text
LANGUAGE plpgsql STABLE PARALLEL SAFE
AS $$
DECLARE
  requester jsonb;
BEGIN
  IF p_voter->>'type' = 'unattributed' THEN
    RETURN 'key_unattributed';
  END IF;
  IF NOT (p_channel = ANY (p_approval.channels)) THEN
    RETURN 'channel_not_allowed';
  END IF;
  IF p_voter->>'type' = 'user' THEN
    IF p_voter->>'role' IS NULL OR p_voter->>'role' = 'viewer' THEN
      RETURN 'not_a_reviewer';
    END IF;
    IF NOT (p_voter->>'role' = ANY (p_approval.reviewer_roles) OR lower(p_voter->>'email') = ANY (p_approval.reviewer_emails)) THEN
      -- A delegate decides in the place of a member the approval names, while the delegation
      -- runs: docs/members-and-channels.md#delegation. The vote is the delegate's. Asked in full
      -- only of someone's delegate: a voter who is nobody's delegate pays one index probe a row
      -- for it (bench:inbox, the empty inbox).
      IF NOT (EXISTS (SELECT 1 FROM members d WHERE d.delegate_id = (p_voter->>'id')::uuid)
              AND jsonb_array_length(ag_stands_in_for(p_approval, p_voter, ag_principal_of(p_approval.requested_by))) > 0) THEN
        RETURN 'not_a_reviewer';
      END IF;
    END IF;
  END IF;
  IF p_approval.allow_self_approval THEN
    RETURN NULL;
  END IF;
  requester := ag_principal_of(p_approval.requested_by);
  IF (requester->>'type' = p_voter->>'type' AND requester->>'id' = p_voter->>'id')
     OR (p_voter->>'type' = 'user' AND lower(p_voter->>'email') = lower(p_approval.on_behalf_of)) THEN
    RETURN 'self_approval';
  END IF;
  IF requester->>'type' = 'unattributed' THEN
    RETURN 'requester_unattributed';
  END IF;
  RETURN NULL;
END
$$;
