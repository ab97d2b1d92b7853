-- Counts a sign-in attempt for an email as a failure before its password is checked, unless
-- p_limit failures within the window are counted already; then says when the oldest of those
-- leaves the window. Attempts for one email are serialized by a transaction-scoped advisory lock,
-- and each statement of this function sees what committed before it ran, so concurrent attempts
-- are counted one after the other and none slips past the limit. One round trip, so the lock is
-- held for the function only. The caller deletes the row again when the password was right.
CREATE OR REPLACE FUNCTION ag_claim_sign_in_attempt(p_email_key text, p_limit integer, p_window interval)
RETURNS TABLE (attempt_id bigint, reopens_at timestamptz)
LANGUAGE plpgsql
AS $$
DECLARE
  v_counted integer;
  v_oldest timestamptz;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended('approval-gate:sign-in:' || p_email_key, 0));
  SELECT count(*), min(recent.failed_at) INTO v_counted, v_oldest
  FROM (
    SELECT failed_at FROM sign_in_failures
    WHERE email_key = p_email_key AND failed_at > clock_timestamp() - p_window
    ORDER BY failed_at DESC
    LIMIT p_limit
  ) AS recent;
  IF v_counted >= p_limit THEN
    RETURN QUERY SELECT NULL::bigint, v_oldest + p_window;
  ELSE
    RETURN QUERY INSERT INTO sign_in_failures (email_key, failed_at) VALUES (p_email_key, clock_timestamp())
      RETURNING sign_in_failures.id, NULL::timestamptz;
  END IF;
END
$$;
