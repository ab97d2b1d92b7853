-- hash = hex(SHA-256(prevHash || canonical(event))), contract C6.
CREATE OR REPLACE FUNCTION ag_audit_hash(p_prev_hash text, p_canonical text)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
  SELECT encode(sha256(convert_to(p_prev_hash || p_canonical, 'UTF8')), 'hex')
$$;
