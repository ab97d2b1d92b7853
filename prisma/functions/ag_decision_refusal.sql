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
-- The rules are ag_principal_refusal's, asked of the voter's principal. A SQL function of one
-- expression, which PostgreSQL inlines into the query that calls it (the inbox asks it of every
-- row), so that it costs no call of its own.
--   p_voter: {"type":"api_key","id"} or {"type":"user","id","email","role"}
CREATE OR REPLACE FUNCTION ag_decision_refusal(p_approval approvals, p_voter jsonb, p_channel text)
RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
  SELECT ag_principal_refusal(p_approval, ag_principal_of(p_voter), p_channel)
$$;
