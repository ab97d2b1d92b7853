-- Records one webhook delivery attempt and what follows from it, in one statement (one round
-- trip, no interactive transaction to wait for under load). Returns false, recording nothing,
-- when this attempt was already recorded (a job run twice after its lock lapsed).
--   p_resolution: 'succeeded', 'retry' (due again at p_next_attempt_at), 'failed' (out of
--   attempts), or 'endpoint-disabled' (410 Gone, or five days of failures: p_disable_reason,
--   with p_audit_events recording it in the chain).
CREATE OR REPLACE FUNCTION ag_record_delivery_attempt(
  p_delivery uuid, p_attempt integer, p_attempted_at timestamptz, p_duration_ms integer,
  p_status_code integer, p_error text, p_response_body text,
  p_resolution text, p_next_attempt_at timestamptz, p_disable_reason text, p_audit_events jsonb)
RETURNS boolean
LANGUAGE plpgsql
AS $$
DECLARE
  v_endpoint uuid;
  v_org uuid;
BEGIN
  UPDATE webhook_deliveries SET
    attempt_count   = p_attempt,
    status          = (CASE p_resolution WHEN 'retry' THEN 'pending' WHEN 'succeeded' THEN 'succeeded' ELSE 'failed' END)::"DeliveryStatus",
    next_attempt_at = CASE WHEN p_resolution = 'retry' THEN p_next_attempt_at END,
    completed_at    = CASE WHEN p_resolution = 'retry' THEN NULL ELSE p_attempted_at END
  WHERE id = p_delivery AND status = 'pending' AND attempt_count = p_attempt - 1
  RETURNING endpoint_id, org_id INTO v_endpoint, v_org;

  IF NOT FOUND THEN
    RETURN false;
  END IF;

  INSERT INTO webhook_attempts (delivery_id, attempted_at, duration_ms, status_code, error, response_body)
  VALUES (p_delivery, p_attempted_at, p_duration_ms, p_status_code, p_error, p_response_body);

  IF p_resolution = 'succeeded' THEN
    UPDATE webhook_endpoints SET failing_since = NULL WHERE id = v_endpoint AND failing_since IS NOT NULL;
  ELSIF p_resolution = 'endpoint-disabled' THEN
    UPDATE webhook_endpoints
    SET enabled = false, disabled_reason = p_disable_reason, updated_at = p_attempted_at,
        failing_since = COALESCE(failing_since, p_attempted_at)
    WHERE id = v_endpoint AND enabled;
    -- Only the attempt that actually disabled it records that, not a concurrent one.
    IF FOUND THEN
      PERFORM ag_append_audit_events(v_org, p_audit_events);
    END IF;
  ELSE
    UPDATE webhook_endpoints SET failing_since = p_attempted_at WHERE id = v_endpoint AND failing_since IS NULL;
  END IF;

  RETURN true;
END
$$;
