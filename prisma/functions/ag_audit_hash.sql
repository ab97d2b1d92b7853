-- hash = hex(SHA-256(prevHash || canonical(event))), see docs/audit.md. STABLE like convert_to: a SQL
-- function declared stricter than what it calls is never inlined, and was called once per event.
CREATE OR REPLACE FUNCTION ag_audit_hash(p_prev_hash text, p_canonical text)
RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
  SELECT encode(sha256(convert_to(p_prev_hash || p_canonical, 'UTF8')), 'hex')
$$;
