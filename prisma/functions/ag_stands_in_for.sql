-- The members a voter stands in for on an approval, as their delegate (docs/members-and-channels.md#delegation):
-- members the approval names as reviewers (by role or email, never a viewer) whose delegation to the
-- voter runs now, other than the member who asked for it (self-approval by proxy). The one
-- definition: ag_decision_refusal lets such a voter decide, and a vote records whom it was cast for.
--   p_voter, p_requester: the principals of the voter and of whoever made the request (ag_principal_of).
-- Returns [{"id","email"}], empty for anyone else.
CREATE OR REPLACE FUNCTION ag_stands_in_for(p_approval approvals, p_voter jsonb, p_requester jsonb)
RETURNS jsonb
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
  SELECT coalesce(jsonb_agg(jsonb_build_object('id', away.id, 'email', away.email) ORDER BY away.email_key), '[]'::jsonb)
  FROM members away
  WHERE p_voter->>'type' = 'user' AND away.delegate_id = (p_voter->>'id')::uuid
    AND away.org_id = p_approval.org_id
    AND coalesce(away.delegation_starts_at, '-infinity') <= now() AND now() < away.delegation_ends_at
    AND away.role <> 'viewer'
    AND (away.role::text = ANY (p_approval.reviewer_roles) OR away.email_key = ANY (p_approval.reviewer_emails))
    AND NOT (p_requester->>'type' = 'user' AND p_requester->>'id' = away.id::text)
    AND away.email_key IS DISTINCT FROM lower(p_approval.on_behalf_of)
$$;
