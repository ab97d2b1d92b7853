-- Records many webhook delivery attempts in one statement and one commit: the group commit of
-- the delivery workers (see GroupCommit in src/lib/group-commit.ts). Each element holds the
-- arguments of ag_record_delivery_attempt by name; the answer is its boolean for each, in order.
CREATE OR REPLACE FUNCTION ag_record_delivery_attempts(p_attempts jsonb)
RETURNS boolean[]
LANGUAGE plpgsql
AS $$
DECLARE
  v_attempt jsonb;
  v_recorded boolean[] := '{}';
BEGIN
  FOR v_attempt IN SELECT value FROM jsonb_array_elements(p_attempts) LOOP
    v_recorded := v_recorded || ag_record_delivery_attempt(
      (v_attempt->>'deliveryId')::uuid, (v_attempt->>'attempt')::integer, (v_attempt->>'attemptedAt')::timestamptz,
      (v_attempt->>'durationMs')::integer, (v_attempt->>'statusCode')::integer, v_attempt->>'error', v_attempt->>'responseBody',
      v_attempt->>'resolution', (v_attempt->>'nextAttemptAt')::timestamptz, v_attempt->>'disableReason', v_attempt->'auditEvents');
  END LOOP;
  RETURN v_recorded;
END
$$;
