-- Creates or replaces a policy (PUT /v1/policies/:key) as the next version of its key, in one
-- statement: the policy row, its version (policy_versions) and its policy.updated audit event.
-- p_policy is the row by column (without version); p_version { document, changedBy, createdAt };
-- p_event the serialized audit event whose canonical `data` lacks only its last member, "version"
-- (every other member's name sorts before it), which is appended here once the number is known.
-- Returns 'limit_reached' (a new key while the organization holds p_limit policies: the
-- organization's lock for that limit, as org-limits.ts takes it, is held to the commit),
-- 'unknown_escalation_target' (escalate_to names another key that does not exist; the target is
-- held FOR KEY SHARE to the commit, against a concurrent delete), or 'stored' with the version, the
-- policy's created_at and its shadow_since. The counter row is taken only after those refusals, so a refused PUT
-- spends no number; its lock orders concurrent PUTs of one key, and a DELETE leaves it, so a
-- later PUT goes on counting. A shadow left as it was keeps the time it was set (shadow_since).
CREATE OR REPLACE FUNCTION ag_put_policy(p_policy jsonb, p_version jsonb, p_event jsonb, p_limit integer)
RETURNS TABLE (outcome text, version integer, created_at timestamptz, shadow_since timestamptz)
LANGUAGE plpgsql
AS $$
DECLARE
  v_org uuid := (p_policy->>'org_id')::uuid;
  v_key text := p_policy->>'key';
  v_target text := p_policy->>'escalate_to';
  v_version integer;
  v_created timestamptz;
  v_shadow_since timestamptz;
  v_data text := p_event->>'data';
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended('approval-gate:org-limit:policies:' || v_org::text, 0));
  IF NOT EXISTS (SELECT 1 FROM policies p WHERE p.org_id = v_org AND p.key = v_key)
     AND (SELECT count(*) FROM policies p WHERE p.org_id = v_org) >= p_limit THEN
    RETURN QUERY SELECT 'limit_reached'::text, NULL::integer, NULL::timestamptz, NULL::timestamptz;
    RETURN;
  END IF;
  IF v_target IS NOT NULL AND v_target <> v_key THEN
    PERFORM 1 FROM policies p WHERE p.org_id = v_org AND p.key = v_target FOR KEY SHARE;
    IF NOT FOUND THEN
      RETURN QUERY SELECT 'unknown_escalation_target'::text, NULL::integer, NULL::timestamptz, NULL::timestamptz;
      RETURN;
    END IF;
  END IF;

  INSERT INTO policy_version_counters AS c (org_id, key, last_version) VALUES (v_org, v_key, 1)
  ON CONFLICT (org_id, key) DO UPDATE SET last_version = c.last_version + 1
  RETURNING c.last_version INTO v_version;

  INSERT INTO policies AS p
  SELECT * FROM jsonb_populate_record(NULL::policies, p_policy || jsonb_build_object('version', v_version))
  ON CONFLICT (org_id, key) DO UPDATE SET
    rules = EXCLUDED.rules, default_outcome = EXCLUDED.default_outcome, timeout_seconds = EXCLUDED.timeout_seconds,
    on_timeout = EXCLUDED.on_timeout, escalate_to = EXCLUDED.escalate_to, reviewer_roles = EXCLUDED.reviewer_roles,
    reviewer_emails = EXCLUDED.reviewer_emails, quorum = EXCLUDED.quorum, allow_self_approval = EXCLUDED.allow_self_approval,
    channels = EXCLUDED.channels, stages = EXCLUDED.stages, remind_after_seconds = EXCLUDED.remind_after_seconds,
    remind_every_seconds = EXCLUDED.remind_every_seconds, standing_approval_max_seconds = EXCLUDED.standing_approval_max_seconds,
    revision = EXCLUDED.revision, version = EXCLUDED.version, updated_at = EXCLUDED.updated_at,
    shadow = EXCLUDED.shadow,
    shadow_since = CASE WHEN p.shadow IS NOT DISTINCT FROM EXCLUDED.shadow THEN p.shadow_since ELSE EXCLUDED.shadow_since END
  RETURNING p.created_at, p.shadow_since INTO v_created, v_shadow_since;

  INSERT INTO policy_versions (org_id, key, version, document, changed_by, policy_created_at, created_at)
  VALUES (v_org, v_key, v_version, p_version->'document', p_version->'changedBy', v_created, (p_version->>'createdAt')::timestamptz);

  PERFORM ag_append_audit_events(v_org, jsonb_build_array(p_event || jsonb_build_object(
    'data', left(v_data, -1) || CASE WHEN v_data = '{}' THEN '' ELSE ',' END || '"version":' || v_version || '}')));
  RETURN QUERY SELECT 'stored'::text, v_version, v_created, v_shadow_since;
END
$$;
