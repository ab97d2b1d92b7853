-- Write paths of the approval lifecycle as SQL functions. Each call is one round trip and one
-- atomic statement: the state change, its audit events and its outbox rows commit together,
-- and an organization's chain head stays locked only while the function runs, never across
-- a network round trip.

-- The exact text an audit event's hash covers: RFC 8785 canonical JSON of
-- {"actor","createdAt","data","seq","type"}, members already in JCS order. `data` is stored
-- canonical (produced by the application with an RFC 8785 library); `actor` and `type` are
-- ASCII strings written by the service, for which to_json escapes exactly as JSON.stringify does.
CREATE FUNCTION ag_audit_canonical(p_seq bigint, p_type text, p_actor text, p_data text, p_created_at timestamptz)
RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
  SELECT '{"actor":' || to_json(p_actor)::text
      || ',"createdAt":"' || to_char(p_created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
      || '","data":' || p_data
      || ',"seq":' || p_seq::text
      || ',"type":' || to_json(p_type)::text
      || '}'
$$;

-- hash = hex(SHA-256(prevHash || canonical(event))), contract C6.
CREATE FUNCTION ag_audit_hash(p_prev_hash text, p_canonical text)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
  SELECT encode(sha256(convert_to(p_prev_hash || p_canonical, 'UTF8')), 'hex')
$$;

-- Appends events to an organization's chain. The head row lock serializes appends of one
-- organization and leaves the others alone; seq has no gaps because a rolled-back caller
-- rolls back its head update too. Events carrying a `webhook` body also go to the outbox.
CREATE FUNCTION ag_append_audit_events(p_org uuid, p_events jsonb)
RETURNS bigint
LANGUAGE plpgsql
AS $$
DECLARE
  v_seq bigint;
  v_hash text;
  v_next_hash text;
  v_event jsonb;
  v_created_at timestamptz;
BEGIN
  SELECT seq, hash INTO v_seq, v_hash FROM audit_chain_heads WHERE org_id = p_org FOR UPDATE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'organization % has no audit chain head', p_org;
  END IF;

  FOR v_event IN SELECT value FROM jsonb_array_elements(p_events) LOOP
    v_seq := v_seq + 1;
    v_created_at := (v_event->>'createdAt')::timestamptz;
    v_next_hash := ag_audit_hash(v_hash, ag_audit_canonical(
      v_seq, v_event->>'type', v_event->>'actor', v_event->>'data', v_created_at));

    INSERT INTO audit_events (org_id, seq, type, actor, data, action, agent, created_at, prev_hash, hash)
    VALUES (p_org, v_seq, v_event->>'type', v_event->>'actor', v_event->>'data',
            v_event->>'action', v_event->>'agent', v_created_at, v_hash, v_next_hash);

    IF v_event ? 'webhook' THEN
      INSERT INTO outbox_messages (org_id, event_id, event_type, body)
      VALUES (p_org, (v_event->'webhook'->>'id')::uuid, v_event->>'type', v_event->'webhook');
    END IF;

    v_hash := v_next_hash;
  END LOOP;

  UPDATE audit_chain_heads SET seq = v_seq, hash = v_hash WHERE org_id = p_org;
  RETURN v_seq;
END
$$;

-- Inserts an approval with its audit events. Returns the new id, or NULL when the
-- (org_id, idempotency_key) pair already exists: the unique index decides idempotency races.
-- With p_monthly_limit set (free plan), the month's counter is raised in the same transaction
-- and SQLSTATE AG402 aborts the whole insert once the limit is reached.
CREATE FUNCTION ag_create_approval(p_approval jsonb, p_events jsonb, p_monthly_limit integer, p_month text)
RETURNS uuid
LANGUAGE plpgsql
AS $$
DECLARE
  v_id uuid;
  v_org uuid := (p_approval->>'org_id')::uuid;
BEGIN
  INSERT INTO approvals
  SELECT * FROM jsonb_populate_record(NULL::approvals, p_approval)
  ON CONFLICT (org_id, idempotency_key) DO NOTHING
  RETURNING id INTO v_id;

  IF v_id IS NULL THEN
    RETURN NULL;
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

  PERFORM ag_append_audit_events(v_org, p_events);
  RETURN v_id;
END
$$;

-- Moves a pending approval to a terminal state with its audit events. Returns false, changing
-- nothing, when the approval is no longer pending or its deadline has passed: the conditional
-- update decides races between deciders, and between a decider and the expiry.
CREATE FUNCTION ag_settle_approval(p_org uuid, p_id uuid, p_changes jsonb, p_events jsonb, p_before_deadline boolean)
RETURNS boolean
LANGUAGE plpgsql
AS $$
BEGIN
  UPDATE approvals SET
    status       = (p_changes->>'status')::"ApprovalStatus",
    verdict      = p_changes->>'verdict',
    feedback     = p_changes->>'feedback',
    payload      = COALESCE(p_changes->'payload', payload),
    decided_at   = (p_changes->>'decidedAt')::timestamptz,
    escalated_to = (p_changes->>'escalatedTo')::uuid,
    expires_at   = NULL
  WHERE org_id = p_org AND id = p_id AND status = 'pending'
    AND (NOT p_before_deadline OR expires_at > clock_timestamp());

  IF NOT FOUND THEN
    RETURN false;
  END IF;

  PERFORM ag_append_audit_events(p_org, p_events);
  RETURN true;
END
$$;
