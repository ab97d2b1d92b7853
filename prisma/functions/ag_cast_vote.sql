-- Records one voter's vote on a pending approval and settles it when the vote decides (see
-- docs/policies.md): one reject vote rejects at once; approve votes from distinct voters approve once they
-- reach the approval's quorum. A voter is a principal, not a credential (ag_principal_key): a
-- member votes once, whether through the console, a link, Slack or any key they own. The approval
-- row is locked for the whole call, so concurrent votes are counted one after another: none is
-- lost, and only one can settle. A request for changes settles at once, as a rejection does.
-- With stages (docs/policies.md#stages), a vote counts in the approval's current stage, and the
-- approve vote that reaches a stage's quorum before the last moves the approval to the next
-- stage: its quorum and reviewers become the approval's (so every check of who may decide asks
-- the current stage), and p_advanced_events are appended. A voter votes in one stage only: the
-- primary key of approval_votes holds one vote per voter per approval.
-- Returns 'recorded' (a vote under quorum: p_recorded_events appended), 'advanced' (the next stage
-- began), 'settled' (p_settlement applied, p_settled_events appended), 'not_pending' (settled,
-- expired, past its deadline, or not at the revision the vote names in p_vote.revision, when it
-- names one), 'stage_moved' (not at the stage p_vote.stage names, for which the events were made:
-- make them again), 'duplicate_voter', or the refusal of ag_decision_refusal. The chain head is
-- taken first, as on every write path.
CREATE OR REPLACE FUNCTION ag_cast_vote(
  p_org uuid, p_id uuid, p_voter jsonb, p_channel text, p_vote jsonb,
  p_recorded_events jsonb, p_advanced_events jsonb, p_settlement jsonb, p_settled_events jsonb)
RETURNS text
LANGUAGE plpgsql
AS $$
DECLARE
  v_took_head boolean;
  v_last_seq bigint;
  v_approval approvals;
  v_voter jsonb := ag_principal_of(p_voter); -- resolved once: for the rules and for the key the vote counts under
  v_refusal text;
  v_approve_votes integer;
  v_next jsonb;
BEGIN
  v_took_head := ag_take_chain_head(p_org);
  -- By primary key: the organization by IS NOT DISTINCT FROM, which no index serves (see oneApproval
  -- in approval-store.ts: a plan made on lagging statistics may otherwise walk the organization).
  SELECT * INTO v_approval FROM approvals WHERE id = p_id AND org_id IS NOT DISTINCT FROM p_org FOR UPDATE;
  IF NOT FOUND OR v_approval.status <> 'pending' OR v_approval.expires_at <= clock_timestamp()
     OR (p_vote->>'revision')::integer <> v_approval.revision THEN
    RETURN 'not_pending';
  END IF;
  IF (p_vote->>'stage')::integer <> v_approval.stage THEN
    RETURN 'stage_moved';
  END IF;

  v_refusal := ag_principal_refusal(v_approval, v_voter, p_channel);
  IF v_refusal IS NOT NULL THEN
    RETURN v_refusal;
  END IF;

  INSERT INTO approval_votes (approval_id, voter_key, voter, verdict, feedback, channel, created_at, stage)
  VALUES (p_id, ag_key_of_principal(v_voter), p_vote->'by', p_vote->>'verdict', p_vote->>'feedback',
          p_channel, (p_vote->>'at')::timestamptz, v_approval.stage)
  ON CONFLICT (approval_id, voter_key) DO NOTHING;
  IF NOT FOUND THEN
    RETURN 'duplicate_voter';
  END IF;

  IF p_vote->>'verdict' = 'approved' THEN
    -- Under a quorum of one, the approving vote just inserted is the one that reaches it.
    IF v_approval.quorum > 1 THEN
      SELECT count(*) INTO v_approve_votes FROM approval_votes
      WHERE approval_id = p_id AND verdict = 'approved' AND stage = v_approval.stage;
      IF v_approve_votes < v_approval.quorum THEN
        v_last_seq := ag_append_audit_events(p_org, p_recorded_events);
        RETURN 'recorded';
      END IF;
    END IF;
    v_next := v_approval.stages->v_approval.stage; -- 0-based: the stage after the current one, or NULL
    IF v_next IS NOT NULL THEN
      UPDATE approvals SET
        stage = v_approval.stage + 1,
        quorum = (v_next->>'quorum')::integer,
        reviewer_roles = ARRAY(SELECT jsonb_array_elements_text(v_next->'reviewers'->'roles')),
        reviewer_emails = ARRAY(SELECT jsonb_array_elements_text(v_next->'reviewers'->'members'))
      WHERE id = p_id AND expires_at > clock_timestamp();
      IF NOT FOUND THEN
        RAISE EXCEPTION 'approval % reached its deadline while the vote was cast', p_id USING ERRCODE = 'AG409';
      END IF;
      v_last_seq := ag_append_audit_events(p_org, p_advanced_events);
      RETURN 'advanced';
    END IF;
  END IF;

  -- The deadline was checked above under the row lock; a clock tick past it since aborts the vote.
  IF NOT ag_settle_approval(p_org, p_id, p_settlement, p_settled_events, 'before') THEN
    RAISE EXCEPTION 'approval % reached its deadline while the vote was cast', p_id USING ERRCODE = 'AG409';
  END IF;
  RETURN 'settled';
END
$$;
