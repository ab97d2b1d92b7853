-- Approves a new request by a standing approval (docs/policies.md#standing-approvals), through the
-- one vote function, as the member who granted it is now: a grant revoked, lapsed, or whose member
-- was removed approves nothing ('standing_inactive'), and ag_cast_vote refuses what that member may
-- not decide now (role, reviewers, self-approval, channel). The grant is held FOR SHARE to the
-- commit, so a revocation (which updates it) waits for votes already under way and is followed by
-- none. Only a request needing one approval is approved this way: a quorum is people, not a grant,
-- and a request in stages needs one approval per stage.
CREATE OR REPLACE FUNCTION ag_apply_standing_approval(
  p_org uuid, p_id uuid, p_standing uuid, p_vote jsonb,
  p_recorded_events jsonb, p_settlement jsonb, p_settled_events jsonb)
RETURNS text
LANGUAGE plpgsql
AS $$
DECLARE
  v_standing standing_approvals;
  v_voter jsonb;
BEGIN
  SELECT * INTO v_standing FROM standing_approvals s WHERE s.id = p_standing AND s.org_id = p_org FOR SHARE;
  IF NOT FOUND OR v_standing.revoked_at IS NOT NULL OR v_standing.expires_at <= clock_timestamp() THEN
    RETURN 'standing_inactive';
  END IF;
  SELECT jsonb_build_object('type', 'user', 'id', m.id, 'email', m.email, 'role', m.role) INTO v_voter
  FROM members m WHERE m.id = (v_standing.granted_by->>'id')::uuid AND m.org_id = p_org;
  IF v_voter IS NULL THEN
    RETURN 'standing_inactive';
  END IF;
  IF (SELECT a.quorum = 1 AND a.stages IS NULL FROM approvals a WHERE a.id = p_id AND a.org_id = p_org) IS NOT TRUE THEN
    RETURN 'standing_inactive';
  END IF;
  -- Without stages no vote advances one: no events for that.
  RETURN ag_cast_vote(p_org, p_id, v_voter, v_standing.channel, p_vote, p_recorded_events, '[]'::jsonb, p_settlement, p_settled_events);
END
$$;
