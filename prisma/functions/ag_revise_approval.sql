-- The requester's revision of an approval a reviewer asked to change (see docs/api.md#revisions),
-- under the approval's row lock, so that concurrent revisions, a late vote and the expiry have one
-- order. p_revision is what approval-transitions.ts made of it: { revision, changes (by column),
-- entry (appended to revisions), policyRevision }. The checks, in order: 'not_found'; 'forbidden'
-- unless p_reviser stands for the principal that created the request (ag_principal_key);
-- 'duplicate' when an earlier revision carried the same idempotency key; 'not_changes_requested'
-- unless changes are requested of exactly the revision it was made from, before the deadline;
-- 'limit_reached' past p_max_revision; 'stale_policy' when the policy changed since it was
-- evaluated. Otherwise the votes of the settled revision are cleared (a revision starts again at
-- stage 1, under the stages of the policy as it is now), the row rewritten, the audit
-- events appended, and 'revised' returned.
CREATE OR REPLACE FUNCTION ag_revise_approval(
  p_org uuid, p_id uuid, p_reviser jsonb, p_revision jsonb, p_events jsonb, p_max_revision integer)
RETURNS text
LANGUAGE plpgsql
AS $$
DECLARE
  v_took_head boolean;
  v_last_seq bigint;
  v_approval approvals;
  v_changes approvals;
  v_key text := p_revision->'entry'->>'idempotencyKey';
BEGIN
  v_took_head := ag_take_chain_head(p_org);
  -- By primary key, as in ag_cast_vote.
  SELECT * INTO v_approval FROM approvals WHERE id = p_id AND org_id IS NOT DISTINCT FROM p_org FOR UPDATE;
  IF NOT FOUND THEN
    RETURN 'not_found';
  END IF;
  IF v_approval.requested_by IS NULL OR ag_principal_key(p_reviser) <> ag_principal_key(v_approval.requested_by) THEN
    RETURN 'forbidden';
  END IF;
  IF v_key IS NOT NULL AND EXISTS (
       SELECT 1 FROM jsonb_array_elements(v_approval.revisions) AS made WHERE made->>'idempotencyKey' = v_key) THEN
    RETURN 'duplicate';
  END IF;
  IF v_approval.status <> 'changes_requested' OR v_approval.expires_at <= clock_timestamp()
     OR v_approval.revision <> (p_revision->>'revision')::integer - 1 THEN
    RETURN 'not_changes_requested';
  END IF;
  IF (p_revision->>'revision')::integer > p_max_revision THEN
    RETURN 'limit_reached';
  END IF;
  IF (SELECT revision FROM policies WHERE org_id = p_org AND key = v_approval.policy_key)
     IS DISTINCT FROM (p_revision->>'policyRevision')::uuid THEN
    RETURN 'stale_policy';
  END IF;

  DELETE FROM approval_votes WHERE approval_id = p_id;
  v_changes := jsonb_populate_record(v_approval, p_revision->'changes');
  UPDATE approvals SET
    status = v_changes.status, payload = v_changes.payload, payload_hash = v_changes.payload_hash,
    context = v_changes.context, revision = v_changes.revision, expires_at = v_changes.expires_at,
    on_timeout = v_changes.on_timeout, escalate_to = v_changes.escalate_to, verdict = v_changes.verdict,
    feedback = v_changes.feedback, decided_at = v_changes.decided_at, decided_by = v_changes.decided_by,
    quorum = v_changes.quorum, reviewer_roles = v_changes.reviewer_roles, reviewer_emails = v_changes.reviewer_emails,
    allow_self_approval = v_changes.allow_self_approval, channels = v_changes.channels,
    -- A revision of the release before stages names none: stage 1 of the policy's, as now.
    stages = CASE WHEN p_revision->'changes' ? 'stages' THEN v_changes.stages
                  ELSE (SELECT stages FROM policies WHERE org_id = p_org AND key = v_approval.policy_key) END,
    stage = coalesce((p_revision->'changes'->>'stage')::integer, 1),
    suggested_payload = v_changes.suggested_payload,
    policy_version = v_changes.policy_version, policy_outcome = v_changes.policy_outcome,
    shadow_outcome = v_changes.shadow_outcome,
    revisions = v_approval.revisions || jsonb_build_array(p_revision->'entry')
  WHERE id = p_id;
  v_last_seq := ag_append_audit_events(p_org, p_events);
  RETURN 'revised';
END
$$;
