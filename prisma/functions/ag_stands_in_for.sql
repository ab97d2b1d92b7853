-- The members a voter stands in for on an approval, as their delegate (docs/members-and-channels.md#delegation):
-- members the approval names as reviewers (by role or email, never a viewer) whose delegation to the
-- voter runs now, other than the member who asked for it (self-approval by proxy). The one
-- definition: ag_decision_refusal lets such a voter decide, and a vote records whom it was cast for.
--   p_voter: as ag_decision_refusal takes it. Returns [{"id","email"}], empty for anyone else.
CREATE OR REPLACE FUNCTION ag_stands_in_for(p_approval approvals, p_voter jsonb)
RETURNS jsonb
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
  SELECT coalesce(jsonb_agg(jsonb_build_object('id', away.id, 'email', away.email) ORDER BY away.email_key), '[]'::jsonb)
  FROM (SELECT ag_principal_of(p_voter) AS voter, ag_principal_of(p_approval.requested_by) AS requester) AS principals
  JOIN members away ON voter->>'type' = 'user' AND away.delegate_id = (voter->>'id')::uuid
  WHERE away.org_id = p_approval.org_id
    AND coalesce(away.delegation_starts_at, '-infinity') <= now() AND now() < away.delegation_ends_at
    AND away.role <> 'viewer'
    AND (away.role::text = ANY (p_approval.reviewer_roles) OR away.email_key = ANY (p_approval.reviewer_emails))
    AND NOT (requester->>'type' = 'user' AND requester->>'id' = away.id::text)
    AND away.email_key IS DISTINCT FROM lower(p_approval.on_behalf_of)
$$;
