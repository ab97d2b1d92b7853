-- Checks the range [p_first, p_last] of an organization's audit chain in one ordered pass over
-- the primary key, without sorting and without sending the events anywhere (see docs/audit.md):
-- returns how many events the range holds and the first seq at which it is broken, or null.
-- Broken means a missing seq (the first missing one is named), a prevHash that is not the hash of
-- the event before (64 zeros before seq 1), or a hash that does not recompute; p_last_hash, when
-- given, is the hash the chain head recorded for p_last, so that the newest event cannot be
-- rewritten either. Callers split a long chain into ranges and run them at once, one connection
-- each: SHA-256 is the cost, and window functions keep Postgres from parallelizing one statement.
-- JIT is off because compiling this plan takes longer than it saves.
CREATE OR REPLACE FUNCTION ag_verify_audit_range(p_org uuid, p_first bigint, p_last bigint, p_last_hash text)
RETURNS TABLE (checked bigint, broken_at bigint)
LANGUAGE sql STABLE
SET jit = off
AS $$
  SELECT count(*),
         coalesce(min(position) FILTER (WHERE NOT intact),
                  CASE WHEN count(*) < p_last - p_first + 1 THEN p_first + count(*) END)
  FROM (
    SELECT p_first - 1 + row_number() OVER w AS position,
           coalesce(
             seq = p_first - 1 + row_number() OVER w
             AND prev_hash = coalesce(lag(hash) OVER w,
                                      CASE WHEN p_first = 1 THEN repeat('0', 64)
                                           ELSE (SELECT p.hash FROM audit_events p WHERE p.org_id = p_org AND p.seq = p_first - 1) END)
             AND hash = ag_audit_hash(prev_hash, ag_audit_canonical(seq, type, actor, data, created_at))
             AND (p_last_hash IS NULL OR seq <> p_last OR hash = p_last_hash),
             false) AS intact
    FROM audit_events
    WHERE org_id = p_org AND seq BETWEEN p_first AND p_last
    WINDOW w AS (ORDER BY seq)
  ) checked
$$;
