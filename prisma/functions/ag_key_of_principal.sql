-- ag_principal_key of a principal already resolved (ag_principal_of): `<type>:<id>`. A vote resolves
-- its voter once, for the rules (ag_principal_refusal) and for this key (ag_cast_vote).
CREATE OR REPLACE FUNCTION ag_key_of_principal(p_principal jsonb)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
  SELECT (p_principal->>'type') || ':' || (p_principal->>'id')
$$;
