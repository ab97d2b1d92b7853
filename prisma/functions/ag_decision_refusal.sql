-- Whether a voter may decide an approval through a channel (see docs/policies.md): NULL when it may, or
-- the refusal: 'channel_not_allowed' (the policy leaves the channel out), 'not_a_reviewer' (a
-- member whose role and email the policy does not name; a viewer never decides), or
-- 'self_approval' (the member the agent acts for, or whoever created the request, unless the
-- policy allows it). The one definition of who may decide: votes, the console's inbox, the
-- members told by email and the Slack buttons all ask it.
--   p_voter: {"type":"api_key","id"} or {"type":"user","id","email","role"}
CREATE OR REPLACE FUNCTION ag_decision_refusal(p_approval approvals, p_voter jsonb, p_channel text)
RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
  SELECT CASE
    WHEN NOT (p_channel = ANY (p_approval.channels)) THEN 'channel_not_allowed'
    WHEN p_voter->>'type' = 'user'
         AND (p_voter->>'role' = 'viewer'
              OR NOT (p_voter->>'role' = ANY (p_approval.reviewer_roles)
                      OR lower(p_voter->>'email') = ANY (p_approval.reviewer_emails))) THEN 'not_a_reviewer'
    WHEN NOT p_approval.allow_self_approval
         AND ((p_approval.requested_by->>'type' = p_voter->>'type' AND p_approval.requested_by->>'id' = p_voter->>'id')
              OR (p_voter->>'type' = 'user' AND lower(p_voter->>'email') = lower(p_approval.on_behalf_of))) THEN 'self_approval'
  END
$$;
