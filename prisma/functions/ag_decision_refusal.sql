-- Whether a voter may decide an approval through a channel (see docs/policies.md): NULL when it may, or
-- the refusal: 'key_unattributed' (a key whose owner is unknown, which decides nothing until
-- attributed), 'channel_not_allowed' (the policy leaves the channel out), 'not_a_reviewer' (a
-- member whose role and email the policy does not name (with stages, the current stage, whose
-- reviewers ag_cast_vote writes into the approval's), and who stands in for no one it names; a
-- viewer, or a removed member, never decides), 'self_approval' (the member the agent acts for, or whoever created the request,
-- unless the policy allows it), or 'requester_unattributed' (the request was made by a key whose
-- owner is unknown, so nobody can be told apart from its maker, unless the policy allows
-- self-approval). Voter and requester are judged as the principals they stand for
-- (ag_principal_of): a member's key decides as the member, and a key made by the requesting key is
-- the requester. The one definition of who may decide: votes, the console's inbox, the members
-- told by email and the Slack buttons all ask it.
-- PL/pgSQL for the reason ag_principal_of is (the plan is kept for the session), and so that each
-- principal is resolved once, and the requester's only when it matters: as a SQL function, its
-- subquery was pulled up and ag_principal_of ran again at every mention of voter or requester.
--   p_voter: {"type":"api_key","id"} or {"type":"user","id","email","role"}
CREATE OR REPLACE FUNCTION ag_decision_refusal(p_approval approvals, p_voter jsonb, p_channel text)
RETURNS text
LANGUAGE plpgsql STABLE PARALLEL SAFE
AS $$
DECLARE
  voter jsonb := ag_principal_of(p_voter);
  requester jsonb;
BEGIN
  IF voter->>'type' = 'unattributed' THEN
    RETURN 'key_unattributed';
  END IF;
  IF NOT (p_channel = ANY (p_approval.channels)) THEN
    RETURN 'channel_not_allowed';
  END IF;
  IF voter->>'type' = 'user'
     AND (voter->>'role' IS NULL OR voter->>'role' = 'viewer'
          OR NOT (voter->>'role' = ANY (p_approval.reviewer_roles)
                  OR lower(voter->>'email') = ANY (p_approval.reviewer_emails)
                  -- A delegate decides in the place of a member the approval names, while the
                  -- delegation runs: docs/members-and-channels.md#delegation. The vote is the delegate's.
                  -- Asked in full only of someone's delegate: a voter who is nobody's delegate
                  -- pays one index probe a row for it (bench:inbox, the empty inbox).
                  OR (EXISTS (SELECT 1 FROM members d WHERE d.delegate_id = (voter->>'id')::uuid)
                      AND jsonb_array_length(ag_stands_in_for(p_approval, voter, ag_principal_of(p_approval.requested_by))) > 0))) THEN
    RETURN 'not_a_reviewer';
  END IF;
  IF p_approval.allow_self_approval THEN
    RETURN NULL;
  END IF;
  requester := ag_principal_of(p_approval.requested_by);
  IF (requester->>'type' = voter->>'type' AND requester->>'id' = voter->>'id')
     OR (voter->>'type' = 'user' AND lower(voter->>'email') = lower(p_approval.on_behalf_of)) THEN
    RETURN 'self_approval';
  END IF;
  IF requester->>'type' = 'unattributed' THEN
    RETURN 'requester_unattributed';
  END IF;
  RETURN NULL;
END
$$;
