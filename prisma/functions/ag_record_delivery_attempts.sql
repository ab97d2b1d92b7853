-- Records many webhook delivery attempts and what follows from them, in one call and one commit:
-- the group commit of the delivery workers (see GroupCommit in src/lib/group-commit.ts). Set-based,
-- one statement for all of them, as a per-attempt loop cost the database about twice the CPU.
-- Each element of p_attempts: deliveryId, attempt, attemptedAt, durationMs, statusCode, error,
-- responseBody, resolution, nextAttemptAt, disableReason, auditEvents. The answer holds a boolean
-- per element, in order: false, recording nothing, when that attempt was already recorded (a job
-- run twice after its lock lapsed, or twice in this very batch).
--   resolution: 'succeeded', 'retry' (due again at nextAttemptAt), 'failed' (out of attempts), or
--   'endpoint-disabled' (410 Gone, or five days of failures: disableReason, with auditEvents
--   recording it in the chain, appended only by the attempt that actually disabled the endpoint).
-- An endpoint's failing_since ends as it would after the attempts one by one, in their order:
-- cleared by a success, set by the first failure after it (or kept, when no success came).
CREATE OR REPLACE FUNCTION ag_record_delivery_attempts(p_attempts jsonb)
RETURNS boolean[]
LANGUAGE plpgsql
AS $$
DECLARE
  v_ids uuid[] := ARRAY(SELECT (value->>'deliveryId')::uuid FROM jsonb_array_elements(p_attempts));
  v_recorded bigint[];
  v_disabled jsonb;
  v_disabling jsonb;
BEGIN
  WITH input AS (
    SELECT DISTINCT ON (a."deliveryId", a.attempt) a.*
    FROM ROWS FROM (jsonb_to_recordset(p_attempts) AS (
      "deliveryId" uuid, attempt integer, "attemptedAt" timestamptz, "durationMs" integer, "statusCode" integer,
      error text, "responseBody" text, resolution text, "nextAttemptAt" timestamptz, "disableReason" text,
      "auditEvents" jsonb)) WITH ORDINALITY AS a(
      "deliveryId", attempt, "attemptedAt", "durationMs", "statusCode", error, "responseBody", resolution, "nextAttemptAt",
      "disableReason", "auditEvents", position)
    ORDER BY a."deliveryId", a.attempt, a.position
  ),
  recorded AS (
    UPDATE webhook_deliveries d SET
      attempt_count   = i.attempt,
      status          = (CASE i.resolution WHEN 'retry' THEN 'pending' WHEN 'succeeded' THEN 'succeeded' ELSE 'failed' END)::"DeliveryStatus",
      next_attempt_at = CASE WHEN i.resolution = 'retry' THEN i."nextAttemptAt" END,
      completed_at    = CASE WHEN i.resolution = 'retry' THEN NULL ELSE i."attemptedAt" END
    FROM input i
    -- Found by the primary key whatever the statistics say: on a young table (none yet) the
    -- planner otherwise scans the whole index of pending deliveries, dead entries and all, on
    -- every call; the status compared as text so that index does not qualify.
    WHERE d.id = ANY (v_ids) AND d.id = i."deliveryId" AND d.status::text = 'pending' AND d.attempt_count = i.attempt - 1
    RETURNING i.position, d.id, d.endpoint_id, d.org_id, i."attemptedAt", i."durationMs", i."statusCode", i.error,
              i."responseBody", i.resolution, i."disableReason", i."auditEvents"
  ),
  logged AS (
    INSERT INTO webhook_attempts (delivery_id, attempted_at, duration_ms, status_code, error, response_body)
    SELECT id, "attemptedAt", "durationMs", "statusCode", error, "responseBody" FROM recorded
  ),
  -- Per endpoint: its last success, and its first attempt that may disable it (only the first can).
  marks AS (
    SELECT endpoint_id, org_id,
           max(position) FILTER (WHERE resolution = 'succeeded') AS last_success,
           min(position) FILTER (WHERE resolution = 'endpoint-disabled') AS disabling
    FROM recorded GROUP BY endpoint_id, org_id
  ),
  -- The first failure of the run still unbroken at the end of the batch, with and without the
  -- disabling attempt (a failure only if it does disable: an already disabled endpoint ignores it).
  effects AS (
    SELECT m.endpoint_id, m.org_id, m.last_success, m.disabling, dis."attemptedAt" AS disabled_at, dis."disableReason",
           dis."auditEvents",
           (SELECT r."attemptedAt" FROM recorded r
            WHERE r.endpoint_id = m.endpoint_id AND r.resolution IN ('retry', 'failed') AND r.position > coalesce(m.last_success, 0)
            ORDER BY r.position LIMIT 1) AS failing_from,
           (SELECT r."attemptedAt" FROM recorded r
            WHERE r.endpoint_id = m.endpoint_id AND r.position > coalesce(m.last_success, 0)
              AND (r.resolution IN ('retry', 'failed') OR r.position = m.disabling)
            ORDER BY r.position LIMIT 1) AS failing_from_if_disabled
    FROM marks m
    LEFT JOIN recorded dis ON dis.position = m.disabling
  ),
  -- The endpoints that change, locked in id order (concurrent batches take them in one order);
  -- read after the lock, so `was_enabled` says whether this batch is the one that disables.
  changing AS (
    SELECT e.id, e.enabled AS was_enabled, x.org_id, x.disabling, x.disabled_at, x."disableReason", x."auditEvents",
           CASE WHEN x.last_success IS NOT NULL THEN next_failing ELSE coalesce(e.failing_since, next_failing) END AS failing_since
    FROM webhook_endpoints e
    JOIN effects x ON x.endpoint_id = e.id
    CROSS JOIN LATERAL (
      SELECT CASE WHEN e.enabled AND x.disabling IS NOT NULL THEN x.failing_from_if_disabled ELSE x.failing_from END AS next_failing
    ) n
    WHERE (e.enabled AND x.disabling IS NOT NULL)
       OR e.failing_since IS DISTINCT FROM
          CASE WHEN x.last_success IS NOT NULL THEN next_failing ELSE coalesce(e.failing_since, next_failing) END
    ORDER BY e.id
    FOR UPDATE OF e
  ),
  changed AS (
    UPDATE webhook_endpoints e SET
      failing_since   = c.failing_since,
      enabled         = e.enabled AND NOT (c.was_enabled AND c.disabling IS NOT NULL),
      disabled_reason = CASE WHEN c.was_enabled AND c.disabling IS NOT NULL THEN c."disableReason" ELSE e.disabled_reason END,
      updated_at      = CASE WHEN c.was_enabled AND c.disabling IS NOT NULL THEN c.disabled_at ELSE e.updated_at END
    FROM changing c
    WHERE e.id = c.id
    RETURNING c.org_id, c."auditEvents", c.was_enabled AND c.disabling IS NOT NULL AS disabled
  )
  SELECT (SELECT array_agg(position) FROM recorded),
         (SELECT jsonb_agg(jsonb_build_object('org', org_id, 'events', "auditEvents")) FROM changed WHERE disabled)
  INTO v_recorded, v_disabled;

  FOR v_disabling IN SELECT value FROM jsonb_array_elements(coalesce(v_disabled, '[]'::jsonb)) LOOP
    PERFORM ag_append_audit_events((v_disabling->>'org')::uuid, v_disabling->'events');
  END LOOP;

  RETURN ARRAY(
    SELECT n = ANY (coalesce(v_recorded, '{}'))
    FROM generate_series(1, jsonb_array_length(p_attempts)) AS n
    ORDER BY n);
END
$$;
