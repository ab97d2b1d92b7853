-- A reviewer's approval that also grants a standing approval (docs/policies.md#standing-approvals):
-- the vote through the one vote function (ag_cast_vote, its arguments as given), and, only when that
-- vote settled the approval, the grant (p_standing: the standing_approvals row by column, without
-- requester_key, which is the principal of whoever created the approval), in one transaction.
-- Returns the vote's outcome; a vote that did not settle grants nothing.
CREATE OR REPLACE FUNCTION ag_grant_standing_approval(
  p_org uuid, p_id uuid, p_voter jsonb, p_channel text, p_vote jsonb,
  p_recorded_events jsonb, p_settlement jsonb, p_settled_events jsonb, p_standing jsonb)
RETURNS text
LANGUAGE plpgsql
AS $$
DECLARE
  v_outcome text;
BEGIN
  -- A grant is refused for a request in stages (approval-service.ts), so this vote advances no stage.
  v_outcome := ag_cast_vote(p_org, p_id, p_voter, p_channel, p_vote, p_recorded_events, '[]'::jsonb, p_settlement, p_settled_events);
  IF v_outcome = 'settled' THEN
    INSERT INTO standing_approvals
    SELECT * FROM jsonb_populate_record(NULL::standing_approvals,
      p_standing || jsonb_build_object('requester_key', (SELECT ag_principal_key(a.requested_by) FROM approvals a WHERE a.id = p_id)));
  END IF;
  RETURN v_outcome;
END
$$;
