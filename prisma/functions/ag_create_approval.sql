-- Inserts an approval with its audit events (and so their outbox rows) in one statement.
-- Creation states the policy revision its verdict rests on (NULL: it found no policy) and inserts
-- only if that is still what the policies table holds, so a process may evaluate against a policy
-- it read earlier and a policy change can never be missed. Returns 'created', 'duplicate' (the
-- (org_id, idempotency_key) unique index decided an idempotency race) or 'stale_policy' (read the
-- policy again and re-evaluate). With p_monthly_limit set (free plan), the month's counter is
-- raised in the same transaction and SQLSTATE AG402 aborts the whole insert at the limit.
-- Like every write path, it takes the organization's chain head first (ag_take_chain_head), so
-- that concurrent writers, single or batched, wait on each other in one order and never deadlock.
-- A creation of the release before stages names no `stages` (nor `stage`, which
-- jsonb_populate_record would leave null, not at its default): it gets the policy's, at stage 1, so
-- that a request it creates under a policy with stages (with stage 1's reviewers and quorum, which
-- the policy row holds as its own) still goes through every stage.
CREATE OR REPLACE FUNCTION ag_create_approval(p_approval jsonb, p_events jsonb, p_monthly_limit integer, p_month text, p_policy_revision uuid)
RETURNS text
LANGUAGE plpgsql
AS $$
DECLARE
  v_took_head boolean;
  v_last_seq bigint;
  v_id uuid;
  v_org uuid := (p_approval->>'org_id')::uuid;
  v_revision uuid;
  v_stages jsonb;
BEGIN
  v_took_head := ag_take_chain_head(v_org);
  SELECT revision, stages INTO v_revision, v_stages FROM policies WHERE org_id = v_org AND key = p_approval->>'policy_key';
  IF v_revision IS DISTINCT FROM p_policy_revision THEN
    RETURN 'stale_policy';
  END IF;

  INSERT INTO approvals
  SELECT * FROM jsonb_populate_record(NULL::approvals,
    CASE WHEN p_approval ? 'stages' THEN p_approval ELSE p_approval || jsonb_build_object('stages', v_stages, 'stage', 1) END
    -- Created settled (auto-approved, an orphan): the event settling it is its receipt's.
    || jsonb_build_object('receipt_seq', ag_receipt_seq(v_org, p_events, (p_approval->>'id')::uuid)))
  ON CONFLICT (org_id, idempotency_key) DO NOTHING
  RETURNING id INTO v_id;

  IF v_id IS NULL THEN
    RETURN 'duplicate';
  END IF;

  IF p_monthly_limit IS NOT NULL THEN
    INSERT INTO monthly_usage (org_id, month, approvals) VALUES (v_org, p_month, 0)
    ON CONFLICT (org_id, month) DO NOTHING;
    UPDATE monthly_usage SET approvals = approvals + 1
    WHERE org_id = v_org AND month = p_month AND approvals < p_monthly_limit;
    IF NOT FOUND THEN
      RAISE EXCEPTION 'monthly approval limit of % reached', p_monthly_limit USING ERRCODE = 'AG402';
    END IF;
  END IF;

  v_last_seq := ag_append_audit_events(v_org, p_events);
  RETURN 'created';
END
$$;
